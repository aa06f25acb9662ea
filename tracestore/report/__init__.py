"""The reviewer's HTML trace report."""
