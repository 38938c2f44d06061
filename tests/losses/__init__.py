"""Tests of munjang.losses."""
