# registered.sh — waiting for the switches to register with the controller (sourced, bash).
#
# switches_registered CTL N [SECONDS] — poll the controller node CTL
# (`incctl -Q` through lab/lab.sh exec) until it lists at least N registered
# switches: 60 tries 1 s apart (the switches retry every 2 s), and with SECONDS
# no longer than that. Sets reg to the last count seen; 0 when N were seen.
switches_registered() {
    local ctl=$1 want=$2 limit=${3:-} t0=$SECONDS i
    reg=0
    for i in $(seq 1 60); do
        reg=$(lab/lab.sh exec "$ctl" "incctl -Q 127.0.0.1 2>/dev/null | grep -c '^  [a-z0-9-]*: {'" 2>/dev/null)
        [ "${reg:-0}" -ge "$want" ] && return 0
        [ -z "$limit" ] || [ $((SECONDS - t0)) -lt "$limit" ] || return 1
        sleep 1
    done
    return 1
}
