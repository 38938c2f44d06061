"""Tests of munjang.applications."""
