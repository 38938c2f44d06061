"""Tests of munjang.inference and of munjang.encoders.dense.pool (encoding in worker processes)."""
