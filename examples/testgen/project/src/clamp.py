def clamp(value, low, high):
    """Limit value to the closed range [low, high]."""
    if low > high:
        raise ValueError("low must not exceed high")
    return max(low, min(high, value))
