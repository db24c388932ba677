#!/usr/bin/env bash
# Build the execution environment (awx/execution-environment.yml) with podman where no container registry is
# reachable, only a Debian mirror and PyPI: the base image is made from Debian packages (debootstrap, then
# `podman import`), ansible-builder builds the EE on it, and the image is smoke-tested:
#   ansible-playbook baremetal.capi.provision_cluster --syntax-check, and a module against the sqlite store.
#
#   sudo awx/build-ee.sh            # or: make ee
#
# Needs root, podman and debootstrap (Debian: apt-get install podman debootstrap) and ansible-builder and
# ansible-galaxy (the project venv: make venv). With a registry at hand, build on the default base image
# instead (docs/awx.md). Environment knobs:
#   EE_TAG            the image built (default localhost/baremetal-capi-ee:<galaxy.yml version>)
#   EE_BASE_IMAGE     the base image; built from Debian when it does not exist (default
#                     localhost/baremetal-capi-ee-base:<suite>)
#   EE_DEBIAN_SUITE   Debian suite of the base image (default bookworm: python3.11, as the EE definition says)
#   EE_DEBIAN_MIRROR  (default http://deb.debian.org/debian)
#   EE_WORK           scratch directory (default build/ee)
#   EE_CA_DIR         local CA certificates (*.crt) the base image trusts besides Debian's, for a TLS-intercepting
#                     proxy between the build and PyPI (default /usr/local/share/ca-certificates, where
#                     update-ca-certificates reads them; empty: none)
#   EE_PODMAN_OPTS    options for podman build / run (default: none when a container starts with podman's
#                     defaults, else those that work here, see docs/awx.md "Building it without a registry")
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
VENV_BIN=${VENV_BIN:-$REPO/.venv/bin}
VERSION=$(sed -n 's/^version: *//p' "$REPO/galaxy.yml")
SUITE=${EE_DEBIAN_SUITE:-bookworm}
MIRROR=${EE_DEBIAN_MIRROR:-http://deb.debian.org/debian}
BASE=${EE_BASE_IMAGE:-localhost/baremetal-capi-ee-base:$SUITE}
TAG=${EE_TAG:-localhost/baremetal-capi-ee:$VERSION}
WORK=${EE_WORK:-$REPO/build/ee}
CA_DIR=${EE_CA_DIR-/usr/local/share/ca-certificates}

step() { printf '\n== %s (%ss)\n' "$*" "$SECONDS"; }

mkdir -p "$WORK"

if ! podman image exists "$BASE"; then
    step "base image $BASE from Debian $SUITE packages"
    rootfs=$WORK/rootfs
    rm -rf "$rootfs"
    # Debian's pip (Debian refuses ensurepip for its system python); python3-venv for ansible-builder's
    # assemble script.
    debootstrap --variant=minbase --include=python3,python3-pip,python3-venv,ca-certificates "$SUITE" "$rootfs" "$MIRROR"
    # ansible-builder's scripts call the package manager as dnf is called ("install -y <packages>",
    # "clean all"); apt-get takes neither form as such, so the base image carries this adapter, named by the
    # build's PKGMGR argument.
    cat > "$rootfs/usr/local/bin/apt-as-dnf" <<'EOF'
#!/bin/sh
# dnf-style calls (ansible-builder's assemble / install-from-bindep scripts) on apt.
set -e
cmd=$1
shift
case "$cmd" in
install)
    packages=
    for arg in "$@"; do
        case "$arg" in -y | --assumeyes) ;; *) packages="$packages $arg" ;; esac
    done
    apt-get update -qq
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $packages
    ;;
clean)
    apt-get clean
    rm -rf /var/lib/apt/lists/*
    ;;
*)
    exec apt-get "$cmd" "$@"
    ;;
esac
EOF
    chmod 755 "$rootfs/usr/local/bin/apt-as-dnf"
    if [ -n "$CA_DIR" ] && compgen -G "$CA_DIR/*.crt" >/dev/null; then
        cp "$CA_DIR"/*.crt "$rootfs/usr/local/share/ca-certificates/"
        chroot "$rootfs" update-ca-certificates
    fi
    # pip's own CA list (certifi) does not have the local CAs: the system bundle.
    printf '[global]\ncert = /etc/ssl/certs/ca-certificates.crt\n' > "$rootfs/etc/pip.conf"
    rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin
    tar -C "$rootfs" -c . | podman import --change 'CMD ["/bin/bash"]' - "$BASE"
    rm -rf "$rootfs"
fi

if [ -z "${EE_PODMAN_OPTS+set}" ]; then
    EE_PODMAN_OPTS=
    if ! out=$(podman run --rm "$BASE" true 2>&1); then
        # A sandbox without CAP_SYS_RESOURCE cannot raise the limits podman asks for (its defaults are above
        # the hard limits podman leaves itself), and crun refuses cgroups v1 with controllers on the v2
        # hierarchy ("hybrid mode"); runc takes both.
        echo "podman run with its defaults failed: $out"
        nproc=$(ulimit -Hu)
        if [ "$nproc" = unlimited ] || [ "$nproc" -gt 32768 ]; then nproc=32768; fi
        EE_PODMAN_OPTS="--runtime runc --ulimit nofile=$(ulimit -Hn):$(ulimit -Hn) --ulimit nproc=$nproc:$nproc"
        podman run --rm $EE_PODMAN_OPTS "$BASE" true
    fi
fi
echo "podman options: ${EE_PODMAN_OPTS:-(none)}"

step "collection tarball and build definition"
src=$WORK/src
rm -rf "$src"
mkdir -p "$src"
cp -r "$REPO/awx" "$src/awx"
rm -rf "$src/awx/collection"
ln -s "$REPO/meta" "$src/meta"
"$VENV_BIN/ansible-galaxy" collection build --force --output-path "$src/awx/collection" "$REPO"
# The definition's defaults are for a registry's base image (dnf, pip from ensurepip); this copy of it builds on
# the Debian one: apt through the adapter, Debian's pip.
"$VENV_BIN/python" - "$src/awx/execution-environment.yml" "$BASE" <<'EOF'
import sys

import yaml

path, base = sys.argv[1:]
with open(path) as f:
    ee = yaml.safe_load(f)
ee["images"]["base_image"]["name"] = base
ee["options"]["package_manager_path"] = "/usr/local/bin/apt-as-dnf"
ee["options"]["skip_pip_install"] = True
with open(path, "w") as f:
    yaml.safe_dump(ee, f, sort_keys=False)
EOF

step "ansible-builder build $TAG on $BASE"
extra=()
if [ -n "$EE_PODMAN_OPTS" ]; then
    extra=(--extra-build-cli-args "$EE_PODMAN_OPTS")
fi
"$VENV_BIN/ansible-builder" build -v 2 --container-runtime podman \
    -f "$src/awx/execution-environment.yml" --context "$WORK/context" -t "$TAG" "${extra[@]}"

step "smoke: ansible-playbook baremetal.capi.provision_cluster --syntax-check"
podman run --rm $EE_PODMAN_OPTS "$TAG" ansible-playbook baremetal.capi.provision_cluster --syntax-check

step "smoke: a module against the sqlite store"
cat > "$WORK/smoke.yml" <<'EOF'
- name: baremetal.capi modules in the execution environment, sqlite store
  hosts: localhost
  connection: local
  gather_facts: false
  vars:
    ansible_python_interpreter: "{{ ansible_playbook_python }}"
    store: {kind: sqlite, path: /tmp/smoke/capi.db}
  tasks:
    - name: Create an IPPool
      baremetal.capi.ippool:
        name: smoke-pool
        namespace: default
        store: "{{ store }}"
        spec:
          namePrefix: smoke
          pools: [{start: 192.168.10.10, end: 192.168.10.20}]
          prefix: 24
      register: created
    - name: Read it back
      baremetal.capi.ippool_info:
        name: smoke-pool
        namespace: default
        store: "{{ store }}"
      register: read
    - name: Check
      ansible.builtin.assert:
        that:
          - created is changed
          - read.pools | length == 1
          - read.pools[0].object.spec.pools[0].start == '192.168.10.10'
EOF
podman run --rm $EE_PODMAN_OPTS -v "$WORK/smoke.yml:/runner/smoke.yml:ro,Z" "$TAG" \
    bash -c 'mkdir -p /tmp/smoke && ansible-playbook -i localhost, /runner/smoke.yml'

step "done: $TAG"
podman image ls "$TAG"
