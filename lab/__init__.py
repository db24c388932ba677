"""The local lab: everything the demo and the integration tests talk to.

Every service binds to 127.0.0.1 (or another 127.0.0.x loopback address) and
is stopped by the PID recorded when it was started.  Not shipped in the
galaxy artifact.
"""
