"""A small JSON client for a workload cluster's kube-apiserver (what kubeadm and the kubelet send)."""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request

MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"


class ApiError(RuntimeError):
    def __init__(self, status: int, message: str):
        super().__init__(f"HTTP {status}: {message}")
        self.status = status


class Api:
    def __init__(self, server: str, token: str, ca_file: str):
        self.server = server.rstrip("/")
        self.token = token
        self.context = ssl.create_default_context(cafile=ca_file)

    def request(self, method: str, path: str, body=None, content_type: str = "application/json", timeout=10.0):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(
            self.server + path,
            data=data,
            method=method,
            headers={
                "Authorization": f"Bearer {self.token}",
                "Content-Type": content_type,
                "Accept": "application/json",
                "User-Agent": "kubelet/lab-node-simulator",
            },
        )
        try:
            with urllib.request.urlopen(req, timeout=timeout, context=self.context) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            raw = exc.read()
            try:
                message = json.loads(raw).get("message", raw.decode(errors="replace"))
            except ValueError:
                message = raw.decode(errors="replace")
            raise ApiError(exc.code, message) from None
        return json.loads(raw) if raw else None

    def get(self, path: str):
        return self.request("GET", path)

    def get_or_none(self, path: str):
        try:
            return self.get(path)
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise

    def create(self, path: str, body: dict):
        """POST; an object that already exists is not an error (returns None)."""
        try:
            return self.request("POST", path, body)
        except ApiError as exc:
            if exc.status == 409:
                return None
            raise

    def patch(self, path: str, body: dict, content_type: str = STRATEGIC):
        return self.request("PATCH", path, body, content_type=content_type)
