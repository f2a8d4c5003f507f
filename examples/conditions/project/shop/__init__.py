"""Order pricing: money amounts, prices, tax, shipping, stock, product import and slugs."""
