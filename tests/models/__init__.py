"""Tests of munjang.models."""
