"""Invoicing: invoices, payments, credit notes, statements, discounts, VAT, late fees, reminders and refunds."""
