#!/bin/sh
# Install the Debian 12 packages that building and testing worldrun need
# (elfutils and gdb: the stacks of --timeout-stacks, and their tests).
# Idempotent: packages already installed are skipped, and apt runs only
# when something is missing. With --bench, also the benchmark anchors;
# with --fuzz, clang and its libFuzzer (for -Dfuzz=true, tests/fuzz).
set -eu

packages="gcc meson ninja-build pkg-config libevent-dev libjansson-dev
libsodium-dev python3 scdoc bats bats-assert bats-support bash-completion
procps elfutils gdb libfabric-dev jq openssh-server openssh-client
iproute2 nftables tcpdump python3-torch mpich libmpich-dev slurmctld slurmd
slurm-client munge libpmix-dev libelf-dev libhwloc-dev openmpi-bin libopenmpi-dev python3-mpi4py
python3-dev python3-pytest python3-numpy g++ libtorch-dev pybind11-dev"
if [ "${1:-}" = "--bench" ]; then
	packages="$packages hyperfine libfabric-bin gnuplot-nox"
fi
if [ "${1:-}" = "--fuzz" ]; then
	packages="$packages clang libclang-rt-14-dev"
fi

missing=""
for p in $packages; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
		missing="$missing $p"
	fi
done
if [ -z "$missing" ]; then
	echo "setup: all packages present"
	exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
	sudo="sudo"
fi
echo "setup: installing$missing"
$sudo apt-get update -q
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends $missing
