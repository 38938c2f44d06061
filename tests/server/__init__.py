"""Tests of munjang.server."""
