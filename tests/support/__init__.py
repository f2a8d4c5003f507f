"""Helpers shared by tests in several folders (imported as ``tests.support.<module>``)."""
