"""Tests of munjang.data."""
