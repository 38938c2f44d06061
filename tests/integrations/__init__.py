"""Tests of munjang.integrations."""
