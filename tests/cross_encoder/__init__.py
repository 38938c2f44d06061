"""Tests of munjang.cross_encoder."""
