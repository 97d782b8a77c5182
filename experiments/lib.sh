# lib.sh — what the experiment scripts share (sourced, not run): argument
# checks, the lab's inventory, running a benchmark on every rank, and the
# run directory with its metadata. Functions print errors as "exp: ..." on
# stderr and return non-zero; they never exit.
#
# Needs: $top (the checkout), $state (the lab's state directory).

EXP_MAX_BYTES=$((2 << 30)) # 2 GiB: what a 3 GiB host holds in place, with room to check it
# the CSV report's header (inccl_perf, mpi_perf, ceiling.sh): column 10 is the reporting rank's (rank
# 0's) time, 13 counts wrong elements, 14 is the slowest rank's time ("-": not measured per rank)
EXP_CSV_COLS=algorithm,collective,dtype,op,root,nranks,bytes,elements,iters,time_us,algbw_MBps,busbw_MBps,wrong
EXP_CSV_HEADER=$EXP_CSV_COLS,time_max_us
# results.csv's header: the tools' first 13 columns, the round (exp.sh ROUNDS) each row was measured
# in, then time_max_us: the round stays column 14 as in the runs from before time_max_us (exp_store_row)
EXP_RESULTS_HEADER=$EXP_CSV_COLS,round,time_max_us
# cpu.csv: per libinccl measurement (calls = timed + untimed collectives) and node, the CPU
# time of the node's process on this machine and the measurement's wall time, both in us;
# node "machine" (role machine): the whole machine's busy time in the same interval; role
# probe (node: the host it ran in): the machine's speed just before the measurement, the CPU
# time of one pass of hostwork's float sum over EXP_PROBE_BYTES in that host (exp_speed_probe),
# the same work as loggp.csv's cpu_sum rows: their ratio is how much slower or faster the
# machine ran than when the model's parameters were measured
EXP_PROBE_BYTES=16777216
EXP_CPU_HEADER=algorithm,collective,bytes,round,calls,node,role,cpu_us,wall_us
# rxe.csv: each host's rxe counters that changed during a measurement (exp_rxe_delta)
EXP_RXE_HEADER=algorithm,collective,bytes,round,calls,node,counter,delta
EXP_SWITCH_HEADER=algorithm,collective,bytes,round,calls,switch,counter,delta

exp_err() { echo "exp: $*" >&2; }
exp_log() { printf '[exp %s] %s\n' "$(date +%H:%M:%S)" "$*"; }

# exp_size_bytes SIZE [WIDTH] — SIZE ("4096", "64K", "512M", "2G"; K/M/G are powers
# of 1024) as bytes on stdout; a whole number of WIDTH-byte elements (default 4:
# exp_dtype_width), WIDTH B .. 2 GiB.
exp_size_bytes() {
    local s=$1 n unit=1 w=${2:-4}
    if [[ ! $s =~ ^([0-9]{1,10})([KkMmGg]?)$ ]]; then
        exp_err "size '$s' is not a number of bytes with an optional K, M or G suffix (e.g. 4096, 64K, 512M, 2G)"
        return 1
    fi
    n=$((10#${BASH_REMATCH[1]}))
    case ${BASH_REMATCH[2]} in K | k) unit=$((1 << 10)) ;; M | m) unit=$((1 << 20)) ;; G | g) unit=$((1 << 30)) ;; esac
    n=$((n * unit))
    if [ "$n" -lt "$w" ]; then
        exp_err "size '$s' is smaller than one $w-byte element"
        return 1
    fi
    if [ $((n % w)) -ne 0 ]; then
        exp_err "size '$s' ($n bytes) is not a whole number of $w-byte elements"
        return 1
    fi
    if [ "$n" -gt "$EXP_MAX_BYTES" ]; then
        exp_err "size '$s' is larger than 2G: a host (3 GiB) holds at most 2 GiB in place"
        return 1
    fi
    echo "$n"
}

# exp_dtype_width DTYPE — the bytes of one element of DTYPE (libinccl's dtypes) on stdout.
exp_dtype_width() {
    case $1 in float16 | bfloat16) echo 2 ;; int64 | uint64 | float64) echo 8 ;; *) echo 4 ;; esac
}

# exp_check_root ROOT NRANKS — ROOT must be a rank 0..NRANKS-1.
exp_check_root() {
    if [[ ! $1 =~ ^[0-9]{1,6}$ ]] || [ "$((10#$1))" -ge "$2" ]; then
        exp_err "ROOT=$1 is not a rank of this topology (0..$(($2 - 1)))"
        return 1
    fi
}

# exp_check_choice NAME VALUE CHOICE... — VALUE must be one of the CHOICEs.
exp_check_choice() {
    local name=$1 v=$2 c
    shift 2
    for c in "$@"; do [ "$v" = "$c" ] && return 0; done
    exp_err "$name=$v is not one of: $*"
    return 1
}

# exp_check_count NAME VALUE MIN — a whole number >= MIN.
exp_check_count() {
    if [[ ! $2 =~ ^[0-9]{1,7}$ ]] || [ "$((10#$2))" -lt "$3" ]; then
        exp_err "$1=$2 is not a whole number >= $3"
        return 1
    fi
}

# exp_sizes MIN MAX FACTOR — the sizes of a sweep in bytes, one per line.
exp_sizes() {
    local s=$1
    while [ "$s" -le "$2" ]; do
        echo "$s"
        s=$((s * $3))
    done
}

# ---- the lab -------------------------------------------------------------------

exp_inv() { grep -v '^#' "$state/gen/inventory.tsv"; }
exp_col() { exp_inv | awk -F'\t' -v n="$1" -v c="$2" '$1 == n {print $c}'; }
# hosts in rank order
exp_hosts() { exp_inv | awk -F'\t' '$2 == "host" {print $3 "\t" $1}' | sort -n | cut -f2; }
# switch levels between a host and the root
exp_tree_levels() {
    exp_inv | awk -F'\t' '{ parent[$1] = $7; if ($2 == "host" && $3 == 0) h = $1 }
        END { n = 0; for (x = parent[h]; x != "-" && x != ""; x = parent[x]) n++; print n }'
}

# exp_lab_reachable — every node answers through the guest agent.
exp_lab_reachable() {
    local n
    [ -r "$state/gen/inventory.tsv" ] || { exp_err "no lab in $state"; return 1; }
    for n in $(exp_inv | cut -f1); do
        if ! "$top/lab/lab.sh" exec "$n" true >/dev/null 2>&1; then
            exp_err "cannot reach $n through its guest agent (make lab-status; make lab-down && make lab-up)"
            return 1
        fi
    done
}

# exp_run_ranks OUT PROGRAM ARGS... — run PROGRAM (inccl_perf) on every rank
# with -r RANK -N NRANKS -m RANK0 -F csv; rank 0's CSV goes to OUT, each
# host's rxe counters that changed meanwhile to OUT.rxe (exp_rxe_delta's
# lines, hosts in rank order; both emptied first; read with the exit status in
# one exec per host, also after a timeout). Shows the elapsed time every 30 s;
# each failed rank's exit status and last errors go to stderr. Returns 0 when every rank exited 0 (every
# element verified); 3 when it could not start: every rank that failed
# exited 3 (inccl_perf: bootstrap, allocation or report file failed, no
# collective ran) or 126/127 (no PROGRAM on the host); 1 otherwise (wrong
# elements, a failure after the start, a timeout, the lab).
exp_run_ranks() {
    local out=$1 prog=$2 hosts n master i h rc t0 shown=0 bad=0 limit=${EXP_LIMIT:-14400} job
    shift 2
    : >"$out"
    : >"$out.rxe"
    mapfile -t hosts < <(exp_hosts)
    n=${#hosts[@]}
    master=$(exp_col "${hosts[0]}" 4)
    # the job's key (libinccl: INCCL_JOB_KEY): rank 0 takes only ranks that hold it
    job=$("${INCLAB_BUILD:-$top/build}/incctl" -G -) || { exp_err "cannot make a job key (incctl -G -)"; return 1; }
    for i in "${!hosts[@]}"; do
        # the host's rxe counters before and after (/tmp/exp.rxe, exp_rxe_delta), then the exit status
        "$top/lab/lab.sh" exec "${hosts[$i]}" "pkill -x $prog; rm -f /tmp/exp.*; ( $EXP_RXE_SNAP 0 > /tmp/exp.rxe; \
            INCCL_JOB_KEY=$job $prog -r $i -N $n -m $master -F csv $* > /tmp/exp.out 2> /tmp/exp.err; r=\$?; \
            $EXP_RXE_SNAP 1 >> /tmp/exp.rxe; echo \$r > /tmp/exp.rc) < /dev/null > /dev/null 2>&1 &" >/dev/null ||
            { exp_err "cannot start $prog on ${hosts[$i]}"; return 1; }
    done
    t0=$(date +%s)
    for h in "${hosts[@]}"; do
        until "$top/lab/lab.sh" exec "$h" "test -e /tmp/exp.rc" >/dev/null 2>&1; do
            if [ $(($(date +%s) - t0)) -ge "$limit" ]; then
                exp_err "$prog on $h still running after $limit s: stopped"
                for h in "${hosts[@]}"; do "$top/lab/lab.sh" exec "$h" "pkill -x $prog; true" >/dev/null 2>&1; done
                # what each host's rxe sent and resent until then (the second snapshot, when the
                # stopped program's shell wrote it in time): what may tell why it hung
                for h in "${hosts[@]}"; do
                    "$top/lab/lab.sh" exec "$h" "cat /tmp/exp.rxe" 2>/dev/null | exp_rxe_delta "$h" >>"$out.rxe"
                done
                return 1
            fi
            if [ $(($(date +%s) - t0)) -ge $((shown + 30)) ]; then
                shown=$(($(date +%s) - t0))
                exp_log "  ... ${shown} s"
            fi
            sleep 3
        done
    done
    "$top/lab/lab.sh" exec "${hosts[0]}" "cat /tmp/exp.out" > "$out"
    for i in "${!hosts[@]}"; do
        h=${hosts[$i]}
        # one exec per host: the exit status (one line, a number; none when the file is
        # missing) and then the counters' snapshots, whose lines all hold a space
        res=$("$top/lab/lab.sh" exec "$h" "cat /tmp/exp.rc /tmp/exp.rxe" 2>/dev/null)
        rc=$(head -n 1 <<<"$res" | grep -x '[0-9]\{1,3\}')
        exp_rxe_delta "$h" <<<"$res" >>"$out.rxe"
        if [ "$rc" != 0 ]; then
            exp_err "rank $i ($h): $prog exited '${rc:-?}': $("$top/lab/lab.sh" exec "$h" "tail -n 2 /tmp/exp.err" 2>/dev/null | tr '\n' ' ')"
            case $rc in
            3 | 126 | 127) [ "$bad" = 1 ] || bad=3 ;;
            *) bad=1 ;;
            esac
        fi
    done
    return $bad
}

# EXP_RXE_SNAP MARK (a command run in a host) — "MARK NAME:VALUE" for each
# port counter of its RDMA devices (rxe: sent_pkts, rcvd_pkts,
# duplicate_request, out_of_seq_request, rcvd_seq_err, rcvd_rnr_err,
# send_rnr_err, completer_retry_err, retry_exceeded_err, ack_deferred, ...:
# the kernel's hw_counters, counted since the device was made), and the
# guest's context switches and interrupts (/proc/stat ctxt, intr: how often
# its CPU was woken and switched); no rxe lines without the device. (No
# " -r " in it: the experiments' fake lab finds inccl_perf's arguments so.)
EXP_RXE_SNAP='sh -c '"'"'for f in /sys/class/infiniband/*/ports/1/hw_counters/*; do v=$(cat "$f" 2>/dev/null) && echo "$0 ${f##*/}:$v"; done; while read k v x; do case $k in ctxt | intr) echo "$0 guest_$k:$v" ;; esac; done < /proc/stat'"'"''

# exp_rxe_delta HOST — "NODE COUNTER DELTA" for each counter of HOST that
# changed during its last exp_run_ranks, from its /tmp/exp.rxe (EXP_RXE_SNAP)
# on stdin: what its rxe sent, received and resent meanwhile, how often its
# CPU was woken. Lines that are not "0|1 NAME:N" are ignored (the file comes
# from the guest); nothing when it has none.
exp_rxe_delta() {
    awk -v h="$1" '$1 ~ /^[01]$/ && NF == 2 && $2 ~ /^[a-z0-9_]+:[0-9]+$/ && length($2) <= 60 {
            split($2, kv, ":"); if (length(kv[2]) > 18) next; if ($1 == 0) a[kv[1]] = kv[2]; else if (kv[1] in a && kv[2] + 0 != a[kv[1]] + 0) print h, kv[1], kv[2] - a[kv[1]] }'
}

# exp_switch_log_lines — "switch lines" of every switch's daemon log, to mark
# where an experiment starts (exp_switch_counters prints what came after).
exp_switch_log_lines() {
    local s
    for s in $(exp_inv | awk -F'\t' '$2 == "switch" {print $1}'); do
        echo "$s $("$top/lab/lab.sh" exec "$s" "wc -l < /var/log/inclab/incswitch.log" 2>/dev/null || echo 0)"
    done
}

# exp_switch_delta MARKS — what each switch counted for the communicators it
# closed since MARKS (exp_switch_log_lines' "switch lines"): "SWITCH COUNTER
# DELTA" for each counter that is not 0, summed over those communicators
# (one per libinccl measurement: its retransmit timeouts, RNR NAKs, held
# frames), one exec per switch. Sets EXP_SWITCH_MARKS to the marks past what
# it read. Only "name=number" words of " comm N: " lines count, numbers of
# at most 18 digits (the log is the switch's; a mangled line adds nothing).
exp_switch_delta() {
    local s n out
    EXP_SWITCH_MARKS=
    while read -r s n; do
        [ -n "$s" ] || continue
        [[ $n =~ ^[0-9]+$ ]] || n=0
        out=$("$top/lab/lab.sh" exec "$s" "tail -n +$((n + 1)) /var/log/inclab/incswitch.log" 2>/dev/null) || out=
        EXP_SWITCH_MARKS+="$s $((n + $(printf '%s' "$out" | grep -c '')))"$'\n'
        printf '%s\n' "$out" | awk -v s="$s" '/ comm [0-9]+: / {
                for (i = 1; i <= NF; i++) if ($i ~ /^[a-z_]+=[0-9]+$/ && length($i) <= 80) {
                    k = substr($i, 1, index($i, "=") - 1); v = substr($i, index($i, "=") + 1)
                    if (length(v) <= 18) { t[k] += v; if (!(k in seen)) { seen[k] = 1; order[++m] = k } } } }
            END { for (i = 1; i <= m; i++) if (t[order[i]] != 0) printf "%s %s %.0f\n", s, order[i], t[order[i]] }'
    done <<<"$1"
}

# exp_switch_counters MARKS — the per-communicator counter lines each switch
# logged since MARKS (from exp_switch_log_lines).
exp_switch_counters() {
    local s n
    while read -r s n; do
        "$top/lab/lab.sh" exec "$s" "tail -n +$((n + 1)) /var/log/inclab/incswitch.log | grep ' comm [0-9]*: '" 2>/dev/null
    done <<<"$1"
}

# exp_run_dir RESULTS NAME — make RESULTS/NAME-YYYYmmdd-HHMMSS (or -2, -3, ...
# when taken: an earlier run is never overwritten); print its path.
exp_run_dir() {
    local base k=1 d
    base=$1/$2-$(date -u +%Y%m%d-%H%M%S)
    d=$base
    mkdir -p "$1" || { exp_err "cannot create $1"; return 1; }
    until mkdir "$d" 2>/dev/null; do
        k=$((k + 1))
        d=$base-$k
        [ "$k" -lt 100 ] || { exp_err "cannot create a run directory under $1 (full disk? permissions?)"; return 1; }
    done
    echo "$d"
}

# ---- MPI baseline ------------------------------------------------------------------

# exp_setup_ssh — rank 0's host gets a key and every host accepts it (mpirun
# starts the ranks over ssh); idempotent.
exp_setup_ssh() {
    local h0 pub h
    h0=$(exp_hosts | head -n 1)
    "$top/lab/lab.sh" exec "$h0" "test -f /root/.ssh/id_ed25519 || { mkdir -p -m 700 /root/.ssh && ssh-keygen -q -t ed25519 -N '' -f /root/.ssh/id_ed25519; }" >/dev/null ||
        { exp_err "cannot make an ssh key on $h0"; return 1; }
    pub=$("$top/lab/lab.sh" exec "$h0" "cat /root/.ssh/id_ed25519.pub") || { exp_err "cannot read $h0's ssh key"; return 1; }
    for h in $(exp_hosts); do
        "$top/lab/lab.sh" exec "$h" "mkdir -p -m 700 /root/.ssh && touch /root/.ssh/authorized_keys && chmod 600 /root/.ssh/authorized_keys &&
            (grep -qxF '$pub' /root/.ssh/authorized_keys || echo '$pub' >> /root/.ssh/authorized_keys) &&
            (systemctl is-active -q ssh || systemctl start ssh)" >/dev/null ||
            { exp_err "cannot authorize $h0's ssh key on $h (is openssh-server in the image?)"; return 1; }
    done
}

# exp_mpirun_args TRANSPORT — mpirun's options for the hosts of the lab in rank
# order over their data-plane addresses: mpi-tcp = OpenMPI's TCP transport
# through the switches (routing only), mpi-ucx = UCX over rxe0 (RoCE).
exp_mpirun_args() {
    local hosts=() h addrs="" nets=""
    for h in $(exp_hosts); do
        a=$(exp_col "$h" 6)
        addrs="$addrs,${a%/*}"
        n=$(exp_col "$h" 6 | awk -F'[./]' '{print $1 "." $2 "." $3 ".0/" $5}')
        [[ ",$nets," == *",$n,"* ]] || nets="$nets,$n"
    done
    echo -n "--allow-run-as-root -np $(exp_hosts | wc -l) -H ${addrs#,} --map-by node"
    echo -n " --mca plm_rsh_args '-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes -o LogLevel=ERROR'"
    echo -n " --mca oob_tcp_if_include ${nets#,}"
    case $1 in
    mpi-tcp) echo " --mca pml ob1 --mca btl self,tcp --mca btl_tcp_if_include ${nets#,}" ;;
    mpi-ucx) echo " --mca pml ucx --mca btl ^tcp,openib,uct -x UCX_NET_DEVICES=rxe0:1 -x UCX_TLS=rc_verbs,self" ;;
    esac
}

# exp_mpi_status RC OUT — what mpirun's exit status RC and rank 0's stdout
# OUT say: 0 every element verified; 3 mpi_perf could not start: mpirun
# failed and OUT has no report header (mpi_perf prints it once every rank is
# ready: no mpi_perf on a host, OpenMPI's abort of MPI_Init when UCX has no
# transport, mpi_perf's own exit 3); 1 otherwise: wrong elements (mpi_perf
# exits 1), bad arguments (2: exp.sh's own fault), a failure after the
# start (mpi_perf's 4), no result within the time limit (124) or the lab's
# agent failed (125).
exp_mpi_status() {
    case $1 in
    0) return 0 ;;
    2 | 4 | 124 | 125) return 1 ;;
    esac
    grep -qxF "$EXP_CSV_HEADER" "$2" && return 1
    return 3
}

# exp_run_mpi OUT TRANSPORT ARGS... — mpi_perf ARGS on every host through
# mpirun from rank 0's host; rank 0's stdout (its CSV, and what UCX may print
# there) into OUT (emptied first); on a failure the errors go to stderr.
# Returns exp_mpi_status's 0, 3 (could not start; also when the ssh set-up
# between the hosts failed) or 1.
exp_run_mpi() {
    local out=$1 tr=$2 h0 rc got=0
    shift 2
    : >"$out"
    exp_setup_ssh || { exp_err "$tr: could not start: ssh between the hosts is not set up"; return 3; }
    h0=$(exp_hosts | head -n 1)
    rc=0
    "$top/lab/lab.sh" exec "$h0" "rm -f /tmp/mpi.*; timeout ${EXP_LIMIT:-14400} mpirun $(exp_mpirun_args "$tr") \
        mpi_perf -a $tr -F csv $* > /tmp/mpi.out 2> /tmp/mpi.err" "${EXP_LIMIT:-14400}" >/dev/null 2>&1 || rc=$?
    "$top/lab/lab.sh" exec "$h0" "cat /tmp/mpi.out" > "$out" 2>/dev/null || got=$?
    [ "$rc" = 0 ] && return 0
    [ "$got" = 0 ] || { exp_err "$tr: mpirun exited $rc and its report on $h0 cannot be read (lab agent: $got)"; return 1; }
    exp_err "$tr: mpirun exited $rc: $("$top/lab/lab.sh" exec "$h0" "tail -n 40 /tmp/mpi.err" 2>/dev/null | exp_reason)"
    exp_mpi_status "$rc" "$out"
}

# ---- what a measurement came to ---------------------------------------------------

# exp_rows LABEL FILE — the data rows of algorithm LABEL in FILE (a tool's CSV
# report, maybe mixed with other lines such as UCX's warnings): lines
# "LABEL,..." of 14 fields whose 13th (wrong elements) is a whole number and
# 14th (time_max_us) a number or "-".
exp_rows() { awk -F, -v l="$1" '$1 == l && NF == 14 && $13 ~ /^[0-9]+$/ && $14 ~ /^([0-9]+(\.[0-9]+)?|-)$/' "$2"; }

# exp_bad_rows LABEL FILE — lines of FILE that start as a row of LABEL but are
# not one (cut short, garbled, a tool from before time_max_us): never stored,
# they fail the measurement.
exp_bad_rows() { awk -F, -v l="$1" '$1 == l && !(NF == 14 && $13 ~ /^[0-9]+$/ && $14 ~ /^([0-9]+(\.[0-9]+)?|-)$/)' "$2"; }

# exp_store_row ROUND — exp_rows' rows on stdin as results.csv's
# (EXP_RESULTS_HEADER): ROUND between the 13th field and time_max_us.
exp_store_row() { awk -F, -v OFS=, -v r="$1" '{ $13 = $13 OFS r; print }'; }

# exp_reason — the telling part of a tool's messages on stdin as one line:
# the lines naming the tool (inccl_perf:, mpi_perf:, exp: without it) first,
# then those saying error, fail, cannot, unreachable, not available, ...,
# then unable / could not / ORTE_ERROR_LOG (OpenMPI's boilerplate and the
# noise of an abort), else the last
# lines; timestamps, OpenMPI's rulers, blank and repeated lines (each rank
# says the same) dropped; at most 3 lines, 400 characters.
exp_reason() {
    awk '{ gsub(/[[:cntrl:]]/, " "); sub(/^(\[[^]]*\] *)+/, ""); gsub(/  +/, " "); sub(/^ /, ""); sub(/ $/, "") }
        $0 == "" || /^-+$/ || seen[$0]++ { next }
        { all[++n] = $0 }
        /^(inccl_perf|mpi_perf|exp): / { sub(/^exp: /, ""); own[++o] = $0; next }
        /ORTE_ERROR_LOG/ || tolower($0) ~ /unable|could not/ { weak[++w] = $0; next }
        tolower($0) ~ /error|fail|cannot|unreachable|not available|not found|no such|refused|timed out|denied|abort|killed/ { hit[++h] = $0 }
        END {
            for (i = 1; i <= o && k < 3; i++) pick[++k] = own[i]
            for (i = 1; i <= h && k < 3; i++) pick[++k] = hit[i]
            for (i = 1; i <= w && k < 3; i++) pick[++k] = weak[i]
            if (k == 0) for (i = (n > 3 ? n - 2 : 1); i <= n; i++) pick[++k] = all[i]
            for (i = 1; i <= k; i++) printf "%s%s", (i > 1 ? " | " : ""), pick[i]
        }' | cut -c1-400
}

# exp_outcome LABEL RC OUT ERRFILE — the verdict on one measurement of
# algorithm LABEL from its runner's status RC (exp_run_ranks, exp_run_mpi: 0
# verified, 3 could not start, else failed), rank 0's report OUT and the
# runner's errors ERRFILE; one line on stdout:
#   ok                    RC 0, at least one row, no wrong element in any
#   unavailable: REASON   RC 3 and neither a report header nor a row: it never
#                         started (REASON from its messages)
#   failed: REASON        anything else, wrong elements first (their count and rows)
exp_outcome() {
    local label=$1 rc=$2 out=$3 err=$4 rows bad verdict
    rows=$(exp_rows "$label" "$out")
    bad=$(exp_bad_rows "$label" "$out")
    verdict=$(awk -F, -v rc="$rc" '{ w += $13; k += $13 != 0 }
        END { if (w) printf "%d wrong element%s in %d row%s%s", w, w == 1 ? "" : "s", k, k == 1 ? "" : "s",
                            rc == 0 ? " (though it exited 0)" : "" }' <<<"$rows")
    if [ -n "$verdict" ]; then
        echo "failed: $verdict"
    elif [ -n "$bad" ]; then
        echo "failed: $(wc -l <<<"$bad") unreadable row(s): $(head -n 1 <<<"$bad" | cut -c1-200)"
    elif [ "$rc" = 0 ] && [ -n "$rows" ]; then
        echo ok
    elif [ "$rc" = 0 ]; then
        echo "failed: exited 0 without a row of $label"
    elif [ "$rc" = 3 ] && [ -z "$rows" ] && ! grep -qxF "$EXP_CSV_HEADER" "$out"; then
        echo "unavailable: $({ cat "$err"; grep -vxF "$EXP_CSV_HEADER" "$out"; } 2>/dev/null | exp_reason)"
    else
        echo "failed: failed after it started: $({ cat "$err"; grep -vxF "$EXP_CSV_HEADER" "$out" | grep -v "^$label,"; } 2>/dev/null | exp_reason)"
    fi
}

# exp_yaml_str TEXT — TEXT as one YAML single-quoted scalar (control
# characters become spaces, ' is doubled): safe whatever a tool printed.
exp_yaml_str() {
    local s=${1//[[:cntrl:]]/ }
    printf "'%s'" "${s//\'/\'\'}"
}

# ---- point to point ----------------------------------------------------------------

# exp_pair — "SRC DST DST_ADDR SRC_GID DST_GID": rank 0's host and the lowest
# rank under another leaf (pku1, pku3 in 1-2-4: the path crosses the whole
# tree), with their RoCE GID indices.
exp_pair() {
    local src dst addr sg dg
    src=$(exp_hosts | head -n 1)
    dst=$(exp_inv | awk -F'\t' -v p="$(exp_col "$src" 7)" '$2 == "host" && $7 != p {print $3, $1}' | sort -n | head -n 1 | cut -d' ' -f2)
    [ -n "$dst" ] || dst=$(exp_hosts | tail -n 1)
    addr=$(exp_col "$dst" 6)
    sg=$("$top/lab/lab.sh" exec "$src" /usr/local/sbin/inclab-ready 2>/dev/null | grep -o 'gid\[[0-9]*\]' | tr -dc 0-9)
    dg=$("$top/lab/lab.sh" exec "$dst" /usr/local/sbin/inclab-ready 2>/dev/null | grep -o 'gid\[[0-9]*\]' | tr -dc 0-9)
    if [ -z "$sg" ] || [ -z "$dg" ]; then
        exp_err "no RoCE GID on $src or $dst (is the lab ready?)"
        return 1
    fi
    echo "$src $dst ${addr%/*} $sg $dg"
}

# exp_perftest TOOL SRC DST DST_ADDR SRC_GID DST_GID ARGS — run perftest's TOOL
# (ib_send_bw, ib_send_lat) server on DST and client on SRC; the client's
# output on stdout; EXP_PERFTEST_TRIES attempts (default 3) of at most
# EXP_PERFTEST_TIMEOUT seconds each (default 240); EXP_PERFTEST_SERVER_ARGS
# after ARGS for the server only (perftest takes an option's last value);
# EXP_PERFTEST_SETTLE seconds for the server to listen (default 2). A
# failure says the client's exit status and last line (124: timed out).
exp_perftest() {
    local tool=$1 src=$2 dst=$3 addr=$4 sg=$5 dg=$6 out attempt rc=0 last=
    local tries=${EXP_PERFTEST_TRIES:-3} limit=${EXP_PERFTEST_TIMEOUT:-240}
    shift 6
    for attempt in $(seq 1 "$tries"); do
        "$top/lab/lab.sh" exec "$dst" "pkill -x $tool; true" >/dev/null 2>&1
        "$top/lab/lab.sh" exec "$dst" "timeout $((limit + 60)) $tool -d rxe0 $* ${EXP_PERFTEST_SERVER_ARGS:-}${EXP_PERFTEST_SERVER_ARGS:+ }-x $dg < /dev/null > /tmp/$tool.server 2>&1 &" >/dev/null
        sleep "${EXP_PERFTEST_SETTLE:-2}"
        rc=0
        out=$("$top/lab/lab.sh" exec "$src" "timeout $limit $tool -d rxe0 $* -x $sg $addr" 2>&1) && break
        rc=$? last=$(grep . <<<"$out" | tail -n 1 | tr -d '[:cntrl:]' | cut -c1-160)
        out=
        [ "$attempt" = "$tries" ] || sleep 3
    done
    "$top/lab/lab.sh" exec "$dst" "pkill -x $tool; true" >/dev/null 2>&1
    [ -n "$out" ] || { exp_err "$tool $src -> $dst failed $tries time(s) (the last: exit $rc${last:+: $last})"; return 1; }
    echo "$out"
}

# exp_perftest_figure SIZE FIELD [1/] — from perftest's report on stdin, FIELD
# (1-based) of the last result line for SIZE bytes, or its inverse with "1/";
# printed with 3 decimals, nothing when that figure is not a finite number
# > 0 (under TCG perftest's cycle counter now and then reports "inf").
exp_perftest_figure() {
    awk -v s="$1" -v f="$2" -v inv="${3:-}" '
        $1 == s && NF >= f { v = ($f ~ /^[0-9]+(\.[0-9]+)?$/ && $f + 0 > 0) ? $f + 0 : "" }
        END { if (v != "") printf "%.3f", inv == "1/" ? 1 / v : v }'
}

# exp_median NUMBER... — the median (the mean of the middle two for an even
# count), 3 decimals: exp_median_range's first figure (its checks, its errors).
exp_median() {
    local r
    r=$(exp_median_range "$@") || return 1
    printf '%s' "${r%% *}"
}

# exp_perftest_value TOOL FIELD [1/] SIZE SRC DST DST_ADDR SRC_GID DST_GID ARGS
# — one figure of TOOL's report for SIZE bytes (exp_perftest_figure), the
# run repeated when that figure is not a finite number > 0, three runs at most.
exp_perftest_value() {
    local tool=$1 field=$2 inv= s out v attempt
    shift 2
    [ "$1" = 1/ ] && { inv=1/; shift; }
    s=$1
    shift
    for attempt in 1 2 3; do
        out=$(exp_perftest "$tool" "$@" -s "$s") || return 1
        v=$(exp_perftest_figure "$s" "$field" $inv <<<"$out")
        [ -n "$v" ] && { echo "$v"; return 0; }
        exp_err "$tool: no finite figure for $s B (run $attempt of 3): $(grep -E "^ *$s " <<<"$out" | tail -n 1)"
    done
    exp_err "$tool: no finite figure for $s B in 3 runs"
    return 1
}

# ---- rounds and run conditions ---------------------------------------------------

# exp_check_range NAME VALUE MIN MAX — a whole number MIN..MAX.
exp_check_range() {
    if [[ ! $2 =~ ^[0-9]{1,7}$ ]] || [ "$((10#$2))" -lt "$3" ] || [ "$((10#$2))" -gt "$4" ]; then
        exp_err "$1=$2 is not a whole number from $3 to $4"
        return 1
    fi
}

# exp_median_range NUMBER... — "MEDIAN MIN MAX" of the numbers (3 decimals each);
# an error when there is none or one is not a finite decimal number.
exp_median_range() {
    local x
    [ $# -gt 0 ] || { exp_err "exp_median_range: no numbers"; return 1; }
    for x in "$@"; do
        [[ $x =~ ^-?[0-9]{1,15}(\.[0-9]{1,15})?$ ]] || { exp_err "exp_median_range: '$x' is not a number"; return 1; }
    done
    # LC_ALL=C: under a locale whose decimal mark is a comma, sort -g reads 1.5 as 1
    printf '%s\n' "$@" | LC_ALL=C sort -g | LC_ALL=C awk '{ v[NR] = $1 } END {
        printf "%.3f %.3f %.3f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2, v[1], v[NR] }'
}

# exp_lab_env KEY [FILE] — KEY's value in the lab's lab.env (default
# $state/lab.env) read as text, never run: the last line KEY=VALUE, one pair
# of surrounding quotes removed, control characters dropped, at most 200
# characters; nothing when the file or the key is missing.
exp_lab_env() {
    local f=${2:-$state/lab.env}
    [ -r "$f" ] || return 0
    head -c 65536 "$f" | awk -v k="$1" 'index($0, k "=") == 1 { v = substr($0, length(k) + 2) } END {
        if (v ~ /^".*"$/ || v ~ /^'\''.*'\''$/) v = substr(v, 2, length(v) - 2)
        gsub(/[[:cntrl:]]/, "", v); print substr(v, 1, 200) }' | sed '/^$/d'
}

# exp_placement [GEN] — meta.yaml's record of where each node ran, from the
# lab's generated files in GEN (default $state/gen): "hypervisors: N" and a
# "placement:" list, one entry per hypervisor with its name, libvirt URI,
# accelerator and nodes (hypervisors.tsv, which topogen writes for a topology
# that declares hypervisors; the accelerator LAB_ACCEL_AT of GEN/../lab.env,
# kvm, tcg or unknown); a lab without that file ran on this machine's
# qemu:///system: one entry "local" with the lab's accelerator (LAB_ACCEL) and
# every node of inventory.tsv. Every string quoted (exp_yaml_str); at most 16
# hypervisors (topogen's limit).
exp_placement() {
    local gen=${1:-$state/gen} name uri addr net br mem nodes _pool at a
    if [ -r "$gen/hypervisors.tsv" ]; then
        at=" $(exp_lab_env LAB_ACCEL_AT "$gen/../lab.env") "
        echo "hypervisors: $(grep -v '^#' "$gen/hypervisors.tsv" | head -n 16 | grep -c .)"
        echo "placement:"
        grep -v '^#' "$gen/hypervisors.tsv" | head -n 16 | while IFS=$'\t' read -r name uri addr net br mem nodes _pool; do
            a=unknown
            case $at in *" $name=kvm "*) a=kvm ;; *" $name=tcg "*) a=tcg ;; esac
            echo "  - {hypervisor: $(exp_yaml_str "$name"), uri: $(exp_yaml_str "$uri"), accelerator: '$a', nodes: $(exp_yaml_str "$nodes")}"
        done
    else
        a=$(exp_lab_env LAB_ACCEL "$gen/../lab.env")
        case $a in kvm | tcg) ;; *) a=unknown ;; esac
        echo "hypervisors: 1"
        echo "placement:"
        echo "  - {hypervisor: 'local', uri: 'qemu:///system', accelerator: '$a', nodes: $(exp_yaml_str "$(grep -v '^#' "$gen/inventory.tsv" 2>/dev/null | cut -f1 | head -n 4096 | tr '\n' ' ' | sed 's/ $//')")}"
    fi
}

# exp_word VALUE DEFAULT — VALUE when it is a plain word (letters, digits, . _ + : , -;
# 1..64 characters), else DEFAULT: lab.env's values as meta.yaml's conditions.
exp_word() {
    if [[ $1 =~ ^[A-Za-z0-9._+:,-]{1,64}$ ]]; then echo "$1"; else echo "$2"; fi
}

# exp_cpu_model [CPUINFO] — the host's CPU model from /proc/cpuinfo ("model
# name", else "Model" or "cpu model"; lscpu's "Model name" when none), one line
# of at most 120 characters; "unknown" when nothing says.
exp_cpu_model() {
    local m
    m=$(head -c 1048576 "${1:-/proc/cpuinfo}" 2>/dev/null | awk -F': *' 'tolower($1) ~ /^(model name|cpu model|model)[ \t]*$/ && $2 != "" && $2 !~ /^[0-9]+$/ { print $2; exit }')
    [ -n "$m" ] || [ -n "${1:-}" ] || m=$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -n 1)
    m=${m//[[:cntrl:]]/ }
    echo "${m:0:120}" | sed 's/^$/unknown/'
}

# exp_loadavg [FILE] — /proc/loadavg's three load averages ("0.52 0.40 0.33"), or "unknown".
exp_loadavg() {
    awk 'NR == 1 && $1 ~ /^[0-9]+\.[0-9]+$/ && $2 ~ /^[0-9]+\.[0-9]+$/ && $3 ~ /^[0-9]+\.[0-9]+$/ { print $1, $2, $3; ok = 1 }
        END { if (!ok) print "unknown" }' "${1:-/proc/loadavg}" 2>/dev/null || echo unknown
}

# exp_cpu_ticks [FILE] — "TOTAL STEAL" jiffies of /proc/stat's cpu line (steal
# is its 8th number; 0 when the kernel shows none), or nothing. TOTAL sums
# user .. steal (fields 2-9): guest and guest_nice (10, 11) are already in user and nice.
exp_cpu_ticks() {
    awk '$1 == "cpu" { t = 0; for (i = 2; i <= NF && i <= 9; i++) { if ($i !~ /^[0-9]+$/) exit; t += $i }
        print t, (NF >= 9 ? $9 : 0); exit }' "${1:-/proc/stat}" 2>/dev/null
}

# exp_steal_pct "TOTAL STEAL" "TOTAL STEAL" — the share of CPU time stolen
# between two exp_cpu_ticks, in percent with 2 decimals, at least 0 (never
# "-0.00", which meta.yaml's reader refuses); nothing when either is missing
# or no time passed.
exp_steal_pct() {
    LC_ALL=C awk -v a="$1" -v b="$2" 'BEGIN { split(a, x, " "); split(b, y, " ")
        if (x[1] == "" || y[1] == "" || y[1] <= x[1]) exit
        v = 100 * (y[2] - x[2]) / (y[1] - x[1]); if (v < 0.005) v = 0
        printf "%.2f", v }'
}

# exp_commit — the checkout's short commit, "-dirty" when it has changes; "unknown" outside git.
exp_commit() {
    echo "$(git -C "$top" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$top" diff --quiet HEAD 2>/dev/null || echo -dirty)"
}

# ---- the same-load ceiling -------------------------------------------------------

# exp_load_pairs — the pairs of hosts of the same-load ceiling, "A B" a line,
# from the inventory: hosts in rank order, each host not yet paired with the
# lowest rank not yet paired under another leaf switch (the path an
# AllReduce's traffic takes across the tree; 1-2-4: pku1 pku3, pku2 pku4),
# else under the same leaf (said on stderr). With an odd number of hosts the
# last one left over sits idle (said on stderr): a pair is one bidirectional
# stream, and a third stream on a host would load it more than an AllReduce
# does. Host names must be plain words (they go into commands); at most 256 hosts.
exp_load_pairs() {
    local inv
    inv=$(exp_inv | awk -F'\t' '$2 == "host"')
    [ -n "$inv" ] || { exp_err "no host in the inventory"; return 1; }
    awk -F'\t' '
        NF < 7 || $1 !~ /^[A-Za-z0-9_.-]+$/ || length($1) > 64 || $3 !~ /^[0-9]+$/ || length($3) > 6 ||
            $7 !~ /^[A-Za-z0-9_.-]+$/ || length($7) > 64 {
            printf "exp: inventory: host line %d is not \"name host rank ... parent\": %s\n", NR, substr($0, 1, 120) > "/dev/stderr"; bad = 1; exit }
        { n++; if (n > 256) { print "exp: inventory: more than 256 hosts" > "/dev/stderr"; bad = 1; exit }
          rank[n] = $3 + 0; name[n] = $1; leaf[n] = $7 }
        END {
            if (bad) exit 1
            for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (rank[j] < rank[i]) {
                t = rank[i]; rank[i] = rank[j]; rank[j] = t; t = name[i]; name[i] = name[j]; name[j] = t
                t = leaf[i]; leaf[i] = leaf[j]; leaf[j] = t }
            for (i = 1; i <= n; i++) {
                if (used[i]) continue
                p = 0
                for (j = i + 1; j <= n && !p; j++) if (!used[j] && leaf[j] != leaf[i]) p = j
                for (j = i + 1; j <= n && !p; j++) if (!used[j]) { p = j
                    printf "exp: load ceiling: %s and %s share leaf %s (no host left under another leaf)\n", name[i], name[j], leaf[i] > "/dev/stderr" }
                if (!p) { printf "exp: load ceiling: %d hosts, an odd number: %s sits idle\n", n, name[i] > "/dev/stderr"; continue }
                used[i] = used[p] = 1
                print name[i], name[p]
            }
        }' <<<"$inv"
}

# exp_bidir_figures SIZE — from an ib_send_bw -b --report-both client report on
# stdin, "LOCAL REMOTE": what the client and what the server sent, MiB/s, the
# 2nd and 3rd result lines for SIZE (the 1st is their sum); without the two
# (an older perftest) half the sum for each. Nothing when a figure is not a
# finite number > 0.
exp_bidir_figures() {
    awk -v s="$1" '$1 == s && NF >= 4 { v[++n] = ($4 ~ /^[0-9]+(\.[0-9]+)?$/ && $4 + 0 > 0) ? $4 + 0 : "" }
        END {
            if (n >= 3 && v[n - 1] != "" && v[n] != "") printf "%.3f %.3f", v[n - 1], v[n]
            else if (n == 1 && v[1] != "") printf "%.3f %.3f", v[1] / 2, v[1] / 2
        }'
}

# ---- CPU time of the lab's processes (the model's host and switch work) -----------

# exp_cpu_pids — "NODE ROLE PID" for every host and switch of the lab: the
# process that does the node's work, whose CPU time (/proc/PID/stat, every
# thread) the LogGP model counts: a namespace node's service (its
# run/inclab/service.pid: incswitch), else the node's QEMU on this machine
# (command qemu-system-*, an argument guest=DOMAIN, DOMAIN the inventory's
# 10th column). A namespace node of another hypervisor (its directories not
# here: on that machine) has its service's pid read there through the lab's
# exec path (lab.sh exec, over ssh; 30 s at most), as "@PID": exp_cpu_snap
# reads its CPU time there. A node whose process is not found is left out
# (said on stderr, and the status is 1); so is a VM of another machine, whose
# QEMU is not found here.
exp_cpu_pids() {
    local n role dom kind hyp first pid p comm arg missing=0
    first=$(awk -F'\t' '!/^#/ {print $1; exit}' "$state/gen/hypervisors.tsv" 2>/dev/null)
    while IFS=$'\t' read -r n role _ _ _ _ _ _ _ dom kind hyp _; do
        case $role in host | switch) ;; *) continue ;; esac
        [[ $n =~ ^[A-Za-z0-9_.-]{1,64}$ ]] || continue
        pid=
        if [ -s "$state/nodes/$n/root/run/inclab/service.pid" ]; then
            pid=$(head -c 16 "$state/nodes/$n/root/run/inclab/service.pid" | tr -dc 0-9)
        elif [ "$kind" = netns ] && [ -n "$hyp" ] && [ "$hyp" != "$first" ]; then
            pid=$(timeout 30 "$top/lab/lab.sh" exec "$n" 'head -c 16 /run/inclab/service.pid' 2>/dev/null < /dev/null)
            if [[ $pid =~ ^[0-9]{1,9}$ ]]; then echo "$n $role @$pid"; else exp_err "cpu: no service pid read for $n ($role) on hypervisor $hyp"; missing=1; fi
            continue
        elif [ -n "$dom" ]; then
            for p in /proc/[0-9]*; do
                read -r comm 2>/dev/null < "$p/comm" || continue
                case $comm in qemu-system-*) ;; *) continue ;; esac
                while IFS= read -r -d '' arg; do
                    [ "${arg%%,*}" = "guest=$dom" ] && { pid=${p#/proc/}; break 2; }
                done 2>/dev/null < "$p/cmdline"
            done
        fi
        if [ -n "$pid" ] && [ -r "/proc/$pid/stat" ]; then echo "$n $role $pid"; else exp_err "cpu: no process found for $n ($role)"; missing=1; fi
    done < <(exp_inv)
    return $missing
}

# exp_cpu_stat_ticks — "TICKS HZ" from a process's /proc/PID/stat line and
# then its machine's `getconf CLK_TCK` on stdin (read on another machine):
# its user + system time in clock ticks (fields 14 and 15, counted after the
# command name, which may hold spaces and parentheses) and that machine's
# ticks per second. Outside text: anything else (no "(comm) " part, fewer
# fields, a field or rate that is not a whole number, a rate outside
# 1..100000) is said on stderr, status 1, nothing printed.
exp_cpu_stat_ticks() {
    local stat="" hz="" rest
    IFS= read -r stat || true
    IFS= read -r hz || true
    stat=$(printf '%s' "$stat" | tr -cd '[:print:]') hz=$(printf '%s' "$hz" | tr -cd '[:print:]')
    [[ $stat =~ ^[0-9]+\ \(.*\)\  ]] || { exp_err "cpu: not a /proc/PID/stat line: '${stat:0:80}'"; return 1; }
    rest=${stat##*) }
    set -f; set -- $rest; set +f
    [ $# -ge 13 ] && [[ ${12} =~ ^[0-9]{1,15}$ && ${13} =~ ^[0-9]{1,15}$ ]] ||
        { exp_err "cpu: /proc/PID/stat has no user and system ticks (fields 14 and 15): '${stat:0:80}'"; return 1; }
    [[ $hz =~ ^[0-9]{1,6}$ ]] && [ "$hz" -ge 1 ] && [ "$hz" -le 100000 ] ||
        { exp_err "cpu: CLK_TCK '${hz:0:20}' is not a tick rate (1..100000)"; return 1; }
    echo "$((10#${12} + 10#${13})) $((10#$hz))"
}

# exp_cpu_snap PIDS — "NODE ROLE TICKS" for each "NODE ROLE PID" line of
# PIDS (exp_cpu_pids): user + system time of the process and its threads in
# clock ticks (fields 14 and 15 of /proc/PID/stat, read after the command
# name, which may hold spaces; parsed by exp_cpu_stat_ticks, as another
# machine's); -1 when the process is gone (and why, on stderr, when its stat
# could not be parsed). A PID "@N" is NODE's machine's process N (a namespace
# node of another hypervisor): its stat and CLK_TCK read there (lab.sh exec,
# 30 s at most), printed "NODE ROLE TICKS HZ"; -1 (and why, on stderr) when
# unreadable.
exp_cpu_snap() {
    local n role pid s hz
    hz=$(getconf CLK_TCK 2>/dev/null)
    [[ $hz =~ ^[0-9]{1,6}$ ]] || hz=100
    while read -r n role pid; do
        [ -n "$pid" ] || continue
        if [[ $pid =~ ^@[0-9]{1,9}$ ]]; then
            s=$(timeout 30 "$top/lab/lab.sh" exec "$n" "cat /proc/${pid#@}/stat && getconf CLK_TCK" 2>/dev/null < /dev/null | exp_cpu_stat_ticks) &&
                echo "$n $role $s" || { exp_err "cpu: $n ($role): process ${pid#@} not read on its machine"; echo "$n $role -1"; }
            continue
        fi
        # this machine's process: the stat line (a newline in the command name made a space)
        # and this machine's rate, which is exp_cpu_delta's default: left out
        s=$(cat "/proc/$pid/stat" 2>/dev/null) || s=
        if [ -n "$s" ] && s=$(exp_cpu_stat_ticks <<<"${s//$'\n'/ }"$'\n'"$hz"); then
            echo "$n $role ${s% *}"
        else
            echo "$n $role -1"
        fi
    done <<<"$1"
}

# exp_cpu_busy [FILE] — "machine machine TICKS": the busy time of the whole
# machine (/proc/stat's cpu line: user, system, irq, softirq, steal) in clock
# ticks, as exp_cpu_snap prints a node's; nothing when unreadable. The lab's
# processes and everything else (the kernel moving the lab's frames, other
# work on the machine) are in it, except niced work (the "nice" column): a
# process at nice 19 weighs 15 against the lab's 1024 (the kernel's
# sched_prio_to_weight), so it runs only while the lab leaves a core idle
# and takes nothing the lab wanted; counting it would make a quiet lab look
# crowded by a background compile.
exp_cpu_busy() {
    awk '$1 == "cpu" && NF >= 9 { for (i = 2; i <= 9; i++) if ($i !~ /^[0-9]+$/) exit
        print "machine machine", $2 + $4 + $7 + $8 + $9; exit }' "${1:-/proc/stat}" 2>/dev/null
}

# exp_cpu_delta BEFORE AFTER — "NODE ROLE CPU_US" for each node in both
# exp_cpu_snap outputs: the CPU time it used in between, in microseconds
# (ticks of getconf CLK_TCK, or of the rate a line of AFTER gives as its 4th
# field: another machine's); nodes whose process went away are left out.
exp_cpu_delta() {
    awk -v hz="$(getconf CLK_TCK 2>/dev/null || echo 100)" 'NR == FNR { t[$1] = $3; r[$1] = $2; next }
        ($1 in t) && t[$1] >= 0 && $3 >= t[$1] { printf "%s %s %.0f\n", $1, $2, ($3 - t[$1]) * 1e6 / ($4 > 0 ? $4 : hz) }' \
        <(echo "$1") <(echo "$2")
}

# exp_hostwork_cpu NODE PIDLINE KIND BYTES PASSES — the CPU time (us) of NODE's process
# (PIDLINE: its exp_cpu_pids line) while hostwork (put at /tmp/hostwork) runs PASSES passes of
# KIND over BYTES there; nothing when it fails
exp_hostwork_cpu() {
    local a b
    a=$(exp_cpu_snap "$2")
    "$top/lab/lab.sh" exec "$1" "/tmp/hostwork $3 $4 $5" >/dev/null 2>&1 || return 1
    b=$(exp_cpu_snap "$2")
    exp_cpu_delta "$a" "$b" | awk '{print $3}'
}

# exp_speed_probe NODE PIDLINE — the CPU time (us) of one pass of hostwork's float sum over
# EXP_PROBE_BYTES in NODE: 5 passes minus 1, over 4 (the start of the program cancels; each
# pass ~0.1 - 0.25 s under TCG, so /proc's 10 ms ticks resolve 1 - 3 %). Nothing when a run
# fails or the difference is not above 0.
exp_speed_probe() {
    local c1 c5
    c1=$(exp_hostwork_cpu "$1" "$2" sum "$EXP_PROBE_BYTES" 1) && c5=$(exp_hostwork_cpu "$1" "$2" sum "$EXP_PROBE_BYTES" 5) &&
        [ -n "$c1" ] && [ -n "$c5" ] || return 1
    awk -v a="$c1" -v b="$c5" 'BEGIN { if (b - a > 0) printf "%.0f\n", (b - a) / 4; else exit 1 }'
}

# ---- CPU inside the timed calls (cpuwin.csv) -------------------------------------------

# cpuwin.csv: per libinccl measurement and sampled process, its CPU inside the union of the ranks'
# timed windows (inccl_perf -X), with cpuwin_cpu()'s bound and the clock offsets' uncertainty
# (analysis/cpuwin.h CPUWIN_CSV_HEADER; experiments/README.md)
EXP_CPUWIN_HEADER=algorithm,collective,bytes,round,calls,node,role,pid,cpu_us,span_us,bound_us,offset_us
EXP_WIN_MAX=1048576 # bytes of a rank's windows file read back: ~90 a line, so ~11,000 iterations

# exp_int64_ok S — S is a whole number 0..2^63-1 (bash's arithmetic) of at most 19 digits.
exp_int64_ok() { [[ $1 =~ ^[0-9]{1,19}$ ]] && { [ ${#1} -lt 19 ] || [[ $1 < 9223372036854775808 ]]; }; }

# exp_guest_clock NODE — "OFFSET_NS RTT_NS": the VM's clock less this
# machine's (guest ns - machine ns) from lab.sh guest-time's read of least
# round trip of 3, and that trip (the offset is good to half of it). Outside
# text: anything but three whole numbers is said on stderr, status 1.
exp_guest_clock() {
    local t m g r x
    t=$(timeout 60 "$top/lab/lab.sh" guest-time "$1" 3 2>&1 < /dev/null) || { exp_err "cpuwin: $1: no guest clock: ${t:0:160}"; return 1; }
    read -r m g r x <<<"$t"
    if [ -n "${x:-}" ] || ! exp_int64_ok "$m" || ! exp_int64_ok "$g" || ! exp_int64_ok "$r"; then
        exp_err "cpuwin: $1: guest-time said '${t:0:80}', not 'MACHINE_NS GUEST_NS RTT_NS'"
        return 1
    fi
    echo "$((10#$g - 10#$m)) $((10#$r))"
}

# exp_clock_offset BEFORE AFTER — "OFFSET_NS UNCERTAINTY_NS" of a VM over a
# measurement from its exp_guest_clock reads before and after it: the mean
# of the two offsets, uncertain by half of each read's round trip (their
# mean) plus half the drift between them (the windows lie in between).
exp_clock_offset() {
    local o1 r1 o2 r2 d
    read -r o1 r1 <<<"$1"
    read -r o2 r2 <<<"$2"
    d=$((o2 - o1))
    [ "$d" -ge 0 ] || d=$((-d))
    echo "$(((o1 + o2) / 2)) $(((r1 + r2) / 4 + (d + 1) / 2))"
}

# exp_cw_clocks PREFIX — each host's exp_guest_clock into PREFIX.HOST, one
# host after another (reads at once would queue on this machine's cores and
# lengthen each other's round trips). Status 1 when one could not be read.
exp_cw_clocks() {
    local h
    for h in $(exp_hosts); do exp_guest_clock "$h" > "$1.$h" || return 1; done
}

# exp_timed_counts DIR — each host's interrupts and RDMA packets inside its
# timed calls, from the windows files exp_cpuwin_rows read into DIR/win.RANK
# (inccl_perf -X: the counts across each call; cpuwin has parsed them): lines
# "NODE timed_intr N" and "NODE timed_pkts N", the sums over the rank's timed
# windows, for rxe.csv. A host whose file has no timed window, a -1 (a counter
# inccl_perf could not read) or a line of another shape (the 6 fields of an
# inccl_perf that did not count) gets no line for that counter: never a sum of
# part of its calls.
exp_timed_counts() {
    local i hosts
    mapfile -t hosts < <(exp_hosts)
    for i in "${!hosts[@]}"; do
        [ -r "$1/win.$i" ] || continue
        awk -F, -v h="${hosts[$i]}" '
            $1 == "rank" { next }
            $2 == "timed" { n++; if (NF != 8) { bi = bp = 1; next }
                            if ($7 ~ /^[0-9]+$/) ti += $7; else bi = 1
                            if ($8 ~ /^[0-9]+$/) tp += $8; else bp = 1 }
            END { if (n && !bi) printf "%s timed_intr %.0f\n", h, ti
                  if (n && !bp) printf "%s timed_pkts %.0f\n", h, tp }' "$1/win.$i"
    done
}

# exp_cpuwin_rows DIR ALGO COLL ROUND PROCS — cpuwin.csv's rows of one
# libinccl measurement: each rank's windows file (/tmp/exp.win, inccl_perf
# -X) read into DIR/win.RANK (at most EXP_WIN_MAX bytes, else refused), each
# host's clock offset from DIR/clock0.HOST and DIR/clock1.HOST
# (exp_clock_offset), then build/cpuwin on DIR/samples.csv for every
# "NODE:ROLE:PID" of PROCS; the rows with ALGO, COLL, ROUND and the largest
# offset uncertainty (us, rounded up) on stdout. What went wrong (cpuwin's
# FILE:LINE reason) on stderr, status 1, nothing printed.
exp_cpuwin_rows() {
    local dir=$1 algo=$2 coll=$3 round=$4 procs=$5 i h o u unc=0 p hosts args=()
    mapfile -t hosts < <(exp_hosts)
    for i in "${!hosts[@]}"; do
        h=${hosts[$i]}
        if ! "$top/lab/lab.sh" exec "$h" "head -c $((EXP_WIN_MAX + 1)) /tmp/exp.win" > "$dir/win.$i" 2>/dev/null; then
            exp_err "cpuwin: rank $i ($h): its windows file /tmp/exp.win could not be read"
            return 1
        fi
        if [ "$(stat -c %s "$dir/win.$i")" -gt "$EXP_WIN_MAX" ]; then
            exp_err "cpuwin: rank $i ($h): /tmp/exp.win is larger than $EXP_WIN_MAX bytes: not read"
            return 1
        fi
        read -r o u < <(exp_clock_offset "$(cat "$dir/clock0.$h")" "$(cat "$dir/clock1.$h")")
        [ "$u" -le "$unc" ] || unc=$u
        args+=(-w "$dir/win.$i=$o")
    done
    for p in $procs; do args+=(-p "$p"); done
    if ! "${INCLAB_BUILD:-$top/build}/cpuwin" -s "$dir/samples.csv" "${args[@]}" > "$dir/cpuwin.out" 2> "$dir/cpuwin.err"; then
        exp_err "$(head -c 600 "$dir/cpuwin.err" | tr -d '\000-\010\013-\037')"
        return 1
    fi
    awk -F, -v OFS=, -v a="$algo" -v c="$coll" -v r="$round" -v u="$(((unc + 999) / 1000))" \
        'NR > 1 { print a, c, $1, r, $2, $3, $4, $5, $6, $7, $8, u }' "$dir/cpuwin.out"
}
