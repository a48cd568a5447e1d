"""Cluster inventory: nodes, ResourceSlices and pods turned into devices per hardware profile."""
