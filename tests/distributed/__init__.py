"""Tests of munjang.distributed."""
