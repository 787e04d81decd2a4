# Test hosts for worldrun-sshd.bats: HOSTS_N network namespaces on one
# bridge, addressed from 198.18.0.0/24 (this machine 198.18.0.1, host i
# 198.18.0.1i), each with a real OpenSSH sshd in mount and UTS namespaces
# of its own: its own host name, an empty /tmp and /dev/shm (but the
# source tree, at its own path, for the same worldrun binary). A key made
# for the run logs in as root. Everything lives in $HOSTS_DIR, under /run,
# and hosts_down removes it all, daemons and namespaces included.

HOSTS_N=3

# hosts_can: root, sshd, ip and unshare, or a reason on stdout.
hosts_can() {
	[ "$(id -u)" = 0 ] || { echo "needs root (network namespaces)"; return 1; }
	for t in /usr/sbin/sshd ssh ssh-keygen ip unshare nft tcpdump; do
		command -v "$t" >/dev/null || { echo "needs $t (openssh-server, iproute2, nftables, tcpdump)"; return 1; }
	done
}

# host_ns I, host_addr I: host I's namespace and address (I from 1).
host_ns() {
	echo "wrh$HOSTS_TAG-$1"
}

host_addr() {
	echo "198.18.0.1$1"
}


host_up() {
	local i=$1 ns addr
	ns=$(host_ns "$i")
	addr=$(host_addr "$i")
	ip netns add "$ns"
	ip link add "wrv$HOSTS_TAG$i" type veth peer name "wrp$HOSTS_TAG$i"
	ip link set "wrv$HOSTS_TAG$i" master "wrb$HOSTS_TAG" up
	ip link set "wrp$HOSTS_TAG$i" netns "$ns"
	ip -n "$ns" link set lo up
	ip -n "$ns" addr add "$addr/24" dev "wrp$HOSTS_TAG$i"
	ip -n "$ns" link set "wrp$HOSTS_TAG$i" up
	cat >"$HOSTS_DIR/sshd.$i" <<-EOF
	ListenAddress $addr
	Port 22
	HostKey $HOSTS_DIR/host_key
	AuthorizedKeysFile $HOSTS_DIR/authorized_keys
	PermitRootLogin prohibit-password
	PasswordAuthentication no
	KbdInteractiveAuthentication no
	StrictModes no
	UsePAM no
	PidFile $HOSTS_DIR/sshd.$i.pid
	LogLevel ERROR
	EOF
	# A host of its own: private mounts, an empty /tmp (with the tree put
	# back at its path) and /dev/shm, its own name. sshd -D stays in the
	# foreground; the pid file says where it is.
	ip netns exec "$ns" unshare --mount --uts --propagation private sh -c '
		dir=$1; name=$2; conf=$3; shift 3
		each() { f=$1; shift; n=0; for t; do n=$((n + 1)); $f "$n" "$t"; done; }
		keep() { mkdir -p "$dir/trees/$name.$1" && mount --bind "$2" "$dir/trees/$name.$1"; }
		back() { mkdir -p "$2" && mount --bind "$dir/trees/$name.$1" "$2"; }
		each keep "$@"
		mount -t tmpfs -o mode=1777 tmpfs /tmp
		mount -t tmpfs -o mode=1777 tmpfs /dev/shm
		each back "$@"
		hostname "$name"
		mkdir -p /run/sshd
		exec /usr/sbin/sshd -D -e -f "$conf"' sh "$HOSTS_DIR" "h$i" "$HOSTS_DIR/sshd.$i" \
		$(trees_in_tmp) 2>>"$HOSTS_DIR/sshd.log" &
}

# hosts_up: the bridge, the hosts, their sshd answering; RSH for --rsh.
hosts_up() {
	HOSTS_TAG=$(printf '%04x' $(($$ % 65536)))
	HOSTS_DIR=/run/wr-hosts-$HOSTS_TAG
	export HOSTS_TAG HOSTS_DIR
	rm -rf "$HOSTS_DIR"
	mkdir -m 0700 "$HOSTS_DIR"
	ssh-keygen -q -t ed25519 -N '' -f "$HOSTS_DIR/host_key"
	ssh-keygen -q -t ed25519 -N '' -f "$HOSTS_DIR/key"
	cp "$HOSTS_DIR/key.pub" "$HOSTS_DIR/authorized_keys"
	ip link add "wrb$HOSTS_TAG" type bridge
	ip addr add 198.18.0.1/24 dev "wrb$HOSTS_TAG"
	ip link set "wrb$HOSTS_TAG" up
	for i in $(seq "$HOSTS_N"); do
		host_up "$i"
	done
	RSH="ssh -i $HOSTS_DIR/key -o UserKnownHostsFile=$HOSTS_DIR/known_hosts -o BatchMode=yes -o StrictHostKeyChecking=accept-new -o ConnectTimeout=5 -o LogLevel=ERROR -l root"
	export RSH
	for i in $(seq "$HOSTS_N"); do
		wait_until 20 $RSH "$(host_addr "$i")" true
	done
}

# hosts_down: every daemon and process of the hosts, the namespaces, the
# bridge and the files; safe to call twice, or after a failed hosts_up.
hosts_down() {
	local i ns pid
	[ -n "${HOSTS_DIR:-}" ] || return 0
	for i in $(seq "$HOSTS_N"); do
		ns=$(host_ns "$i")
		for pid in $(ip netns pids "$ns" 2>/dev/null); do
			kill -9 "$pid" 2>/dev/null || true
		done
		ip netns del "$ns" 2>/dev/null || true
	done
	ip link del "wrb$HOSTS_TAG" 2>/dev/null || true
	rm -rf "$HOSTS_DIR"
}

# host_procs I: the pids of processes in host I's namespace but its sshd.
host_procs() {
	local pid daemon
	daemon=$(cat "$HOSTS_DIR/sshd.$1.pid" 2>/dev/null)
	for pid in $(ip netns pids "$(host_ns "$1")"); do
		[ "$pid" = "$daemon" ] || echo "$pid"
	done
}

# host_link I up|down: host I's one link to the bridge, as a cable pulled.
host_link() {
	ip -n "$(host_ns "$1")" link set "wrp$HOSTS_TAG$1" "$2"
}

# host_states I: the state letter (R, S, T, ...) and name of each process
# on host I but its sshd, a line each.
host_states() {
	local pid
	for pid in $(host_procs "$1"); do
		# The name may hold spaces and parentheses: the state follows
		# the last ")".
		sed -n 's/^[0-9]* (\(.*\)) \([A-Za-z]\) .*/\2 \1/p' "/proc/$pid/stat" 2>/dev/null
	done
}

# hosts_idle: no process on any host but its sshd.
hosts_idle() {
	local i
	for i in $(seq "$HOSTS_N"); do
		[ -z "$(host_procs "$i")" ] || return 1
	done
}
