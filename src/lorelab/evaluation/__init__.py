"""Evaluations that decide, honestly, whether memory helped: learning, context, conditions."""
