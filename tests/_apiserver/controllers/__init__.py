"""Tests of the embedded server's controllers."""
