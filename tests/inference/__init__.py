"""Tests of munjang.inference and of munjang.encode_pool (encoding in worker processes)."""
