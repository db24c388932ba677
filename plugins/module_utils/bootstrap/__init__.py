"""Kubeadm bootstrap data, as the Cluster API kubeadm bootstrap provider renders it."""
