"""Tests of munjang.evaluation."""
