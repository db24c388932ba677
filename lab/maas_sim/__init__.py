"""A MAAS REST API 2.0 simulator for the lab (see docs/maas-simulator.md).

Run it with ``python -m lab.maas_sim --port 25240 --api-key CK:TK:TS``; the lab
service ``lab/services/maas.py`` does that and writes the key file.
"""
