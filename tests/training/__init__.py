"""Tests of munjang.training."""
