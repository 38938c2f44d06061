"""Tests of munjang.search."""
