"""Tests of munjang.encoders.cross."""
