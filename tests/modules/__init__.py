"""Tests of munjang.modules."""
