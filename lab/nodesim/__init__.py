"""The lab's node simulator: cloud-init, kubeadm and the kubelet of every provisioned lab host.

See docs/lab.md ("Node simulator"), ``sim.py`` for the reconcile step and
``client.py`` for what tests call.
"""
