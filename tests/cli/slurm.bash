# A private Slurm for worldrun-slurm.bats: a controller, a munged with its
# own key, and SLURM_N emulated nodes n1..nN (one slurmd each, all on
# this host, told apart by SLURMD_NODENAME and SLURM_NODEID), everything
# on 127.0.0.1 at ports found free, under one short directory that
# slurm_down removes with every process the cluster started. See
# ../../../shared/reference/slurm.md for why each setting is there.
# Root only.

SLURM_N=3
SLURM_CPUS=4

# slurm_can: root and Slurm's daemons and tools, or a reason on stdout.
slurm_can() {
	[ "$(id -u)" = 0 ] || { echo "needs root (slurmd runs tasks as any user)"; return 1; }
	for t in slurmctld slurmd srun salloc sbatch sinfo squeue scancel munged mungekey ss; do
		command -v "$t" >/dev/null ||
			{ echo "needs $t (slurmctld slurmd slurm-client munge iproute2)"; return 1; }
	done
}

# A port base with SLURM_N + 1 free ports from it, picked at random.
slurm_ports() {
	local base i used
	used=$(ss -Htanl | awk '{ n = split($4, a, ":"); print a[n] }')
	for _ in $(seq 50); do
		base=$((20000 + RANDOM % 40000))
		for i in $(seq 0 "$SLURM_N"); do
			grep -qx "$((base + i))" <<<"$used" && continue 2
		done
		echo "$base"
		return 0
	done
	return 1
}

# slurm_up: the cluster, every node idle; WRS_DIR (its directory) and
# SLURM_CONF exported.
slurm_up() {
	local host port i
	host=$(hostname -s)
	port=$(slurm_ports) || { echo "slurm_up: no free ports" >&2; return 1; }
	# munged wants every directory above its socket reachable by all.
	WRS_DIR=$(mktemp -d /tmp/wrs.XXXXXX) || return 1
	chmod 0755 "$WRS_DIR"
	export WRS_DIR SLURM_CONF=$WRS_DIR/etc/slurm.conf
	mkdir -p "$WRS_DIR"/{etc,state,log,run,munge,key}
	chmod 0700 "$WRS_DIR/key"
	mungekey -c -k "$WRS_DIR/key/munge.key" || return 1
	munged -S "$WRS_DIR/munge/munge.sock" --key-file="$WRS_DIR/key/munge.key" \
		--pid-file="$WRS_DIR/run/munged.pid" --log-file="$WRS_DIR/log/munged.log" \
		--seed-file="$WRS_DIR/munge/munged.seed" || return 1
	cat >"$SLURM_CONF" <<-EOF
	ClusterName=wrtest
	SlurmctldHost=$host(127.0.0.1)
	SlurmctldPort=$port
	CommunicationParameters=NoCtldInAddrAny,NoInAddrAny
	SlurmUser=root
	SlurmdUser=root
	AuthType=auth/munge
	CredType=cred/munge
	AuthInfo=socket=$WRS_DIR/munge/munge.sock
	StateSaveLocation=$WRS_DIR/state
	SlurmdSpoolDir=$WRS_DIR/spool/%n
	SlurmctldPidFile=$WRS_DIR/run/slurmctld.pid
	SlurmdPidFile=$WRS_DIR/run/slurmd-%n.pid
	SlurmctldLogFile=$WRS_DIR/log/slurmctld.log
	SlurmdLogFile=$WRS_DIR/log/slurmd-%n.log
	PlugStackConfig=$WRS_DIR/etc/plugstack.conf
	ProctrackType=proctrack/linuxproc
	TaskPlugin=task/none
	JobAcctGatherType=jobacct_gather/none
	AccountingStorageType=accounting_storage/none
	JobCompType=jobcomp/none
	MpiDefault=none
	SwitchType=switch/none
	SchedulerType=sched/builtin
	SelectType=select/cons_tres
	SelectTypeParameters=CR_CPU
	SlurmdParameters=config_overrides
	ReturnToService=2
	MinJobAge=30
	KillWait=5
	InactiveLimit=0
	NodeName=n[1-$SLURM_N] NodeHostname=$host NodeAddr=127.0.0.1 Port=$((port + 1))-$((port + SLURM_N)) CPUs=$SLURM_CPUS RealMemory=1000 State=UNKNOWN
	PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
	EOF
	: >"$WRS_DIR/etc/plugstack.conf"
	slurmctld -f "$SLURM_CONF" || return 1
	for i in $(seq "$SLURM_N"); do
		mkdir -p "$WRS_DIR/spool/n$i"
		# WRS_LAST_CPUS: the last node's slurmd, and so its steps, may
		# use those CPUs only, as a cgroup gives a job part of a node.
		if [ "$i" = "$SLURM_N" ] && [ -n "${WRS_LAST_CPUS:-}" ]; then
			taskset -c "$WRS_LAST_CPUS" slurmd -f "$SLURM_CONF" -N "n$i" || return 1
		else
			slurmd -f "$SLURM_CONF" -N "n$i" || return 1
		fi
	done
	wait_until 20 slurm_idle || {
		grep -hs -e 'fatal:' -e 'Unable to bind' "$WRS_DIR"/log/*.log >&2
		return 1
	}
}

slurm_idle() {
	[ "$(timeout 5 sinfo -h -o %t 2>/dev/null | sort -u)" = idle ]
}

# Whether pid $1 is alive and not a zombie.
slurm_alive() {
	local st
	st=$(ps -o stat= -p "$1" 2>/dev/null) && [ "${st#Z}" = "$st" ]
}

# The pids of the cluster's daemons, steps and tasks: every process
# whose command line or working directory names WRS_DIR, and the
# children of its step daemons.
slurm_procs() {
	local pid stepd
	for pid in $(pgrep -f -- "$WRS_DIR/" 2>/dev/null); do
		echo "$pid"
	done
	for stepd in $(ss -xlpn 2>/dev/null | grep -F "$WRS_DIR/spool/" |
		grep -o 'pid=[0-9]*' | grep -o '[0-9]*$' | sort -u); do
		echo "$stepd"
		ps -o pid= --ppid "$stepd"
	done
}

# slurm_steps: the job steps the controller knows of, a line each.
slurm_steps() {
	timeout 5 squeue -h -s -o '%i %j' 2>/dev/null
}

slurm_nojobs() {
	[ -z "$(timeout 5 squeue -h -o %A 2>/dev/null)" ]
}

# slurm_down: every job cancelled, every process of the cluster gone,
# WRS_DIR removed; safe to call twice, or after a failed slurm_up. It
# touches nothing but a directory slurm_up made.
slurm_down() {
	local jobs pid
	case ${WRS_DIR:-} in
	/tmp/wrs.??????) [ -d "$WRS_DIR" ] || return 0 ;;
	*) return 0 ;;
	esac
	jobs=$(timeout 5 squeue -h -o %A 2>/dev/null)
	if [ -n "$jobs" ]; then
		# shellcheck disable=SC2086
		timeout 5 scancel $jobs 2>/dev/null
		wait_until 10 slurm_nojobs || true
	fi
	for pid in $(slurm_procs); do
		kill -TERM "$pid" 2>/dev/null
	done
	for _ in $(seq 50); do
		pid=
		for pid in $(slurm_procs); do
			slurm_alive "$pid" && break
			pid=
		done
		[ -n "$pid" ] || break
		sleep 0.1
	done
	for pid in $(slurm_procs); do
		kill -KILL "$pid" 2>/dev/null
	done
	rm -rf "$WRS_DIR"
}
