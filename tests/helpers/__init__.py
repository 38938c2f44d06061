"""Helpers shared by the tests (imported as `tests.helpers.<module>`); scripts/ holds the scripts
that tests run by path in a process of their own."""
