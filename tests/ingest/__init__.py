"""Tests of munjang.ingest."""
