# rgw.sh - a real, throw-away Ceph RGW on 127.0.0.1 for the object-storage
# tests: one monitor, one memstore OSD and radosgw, every file of theirs
# under one directory of $WORK, a user with known keys.  Sourced after
# lib.sh.  Facts behind each setting: docs/object-storage.md ("Testing").
#
#   need_rgw             exit 77 (skip) with a message when the Debian
#                        packages ceph-mon, ceph-osd, radosgw are absent
#   rgw_start            builds and starts the cluster; sets RGW_URL,
#                        RGW_PORT, RGW_DIR, RGW_ACCESS_KEY, RGW_SECRET_KEY,
#                        RGW_REGION
#   rgw_bucket NAME      creates a bucket (curl's own SigV4 signing)
#   rgw_s3 NAME          rgw_bucket, the AWS variables, S3 (serve flags)
#   rgw_pause/rgw_resume SIGSTOP/SIGCONT radosgw (by its pid file)
#   rgw_down/rgw_up      terminates radosgw alone (connections refused),
#                        starts it again on the same data
#   rgw_stop             stops every daemon by the pid file it wrote
#
# The caller's EXIT trap must call rgw_stop (lib.sh's cleanup removes
# $WORK, not the daemons), as with start_debuginfod.  A test killed
# without its trap running (SIGKILL, as ctest's timeout sends) is covered
# by rgw_guard's watchdog.

RGW_DIR=
RGW_ACCESS_KEY=UNHEXTESTACCESSKEY01
RGW_SECRET_KEY=unhexTestSecretKey0123456789abcdefghijklm
RGW_REGION=us-east-1

need_rgw() {
	local b
	for b in ceph-mon ceph-osd radosgw radosgw-admin ceph ceph-authtool monmaptool; do
		command -v "$b" >/dev/null || {
			echo "SKIP: $b is missing: install the Debian packages ceph-mon ceph-osd radosgw (.ci/deps.sh does)" >&2
			exit 77
		}
	done
}

rgw_ceph() {
	timeout 60 ceph -c "$RGW_DIR/ceph.conf" "$@"
}

rgw_start() {
	local d mon1 mon2 fsid uuid id i out
	need_rgw
	d=$WORK/rgw
	RGW_DIR=$d
	mkdir -p "$d/run" "$d/log" "$d/crash" "$d/mon" "$d/osd" "$d/rgw"
	rgw_guard
	# lib.sh's free_port: the monitor cannot take port 0 (its address goes
	# into the monmap), and radosgw must come back on its port (rgw_up).
	{ read -r mon1; read -r mon2; read -r RGW_PORT; } < <(free_port 3)
	RGW_URL="http://127.0.0.1:$RGW_PORT"
	fsid=$(python3 -c 'import uuid; print(uuid.uuid4())')
	# Authentication between the daemons is off (one host, loopback), but
	# radosgw's built-in defaults demand a secure mon connection and would
	# retry forever (-13) without ms_mon_client_mode.  One OSD: pools of
	# size 1 and few PGs (RGW makes 7 pools; 32 PGs each is over the
	# per-OSD limit).  $name and $id are ceph's own metavariables.
	cat >"$d/ceph.conf" <<EOF
[global]
fsid = $fsid
mon_host = [v2:127.0.0.1:$mon2,v1:127.0.0.1:$mon1]
public_addr = 127.0.0.1
auth_cluster_required = none
auth_service_required = none
auth_client_required = none
osd_pool_default_size = 1
osd_pool_default_min_size = 1
mon_allow_pool_size_one = true
osd_crush_chooseleaf_type = 0
osd_pool_default_pg_num = 8
osd_pool_default_pgp_num = 8
osd_pool_default_pg_autoscale_mode = off
mon_max_pg_per_osd = 1000
run_dir = $d/run
admin_socket = $d/run/\$name.asok
pid_file = $d/run/\$name.pid
log_file = $d/log/\$name.log
crash_dir = $d/crash
keyring = $d/keyring
mon_data = $d/mon/\$id
osd_data = $d/osd/\$id
osd_objectstore = memstore
memstore_device_bytes = 536870912
[client.rgw]
ms_mon_client_mode = crc secure
rgw_frontends = beast endpoint=127.0.0.1:$RGW_PORT
rgw_data = $d/rgw
rgw_dns_name = localhost
EOF
	ceph-authtool --create-keyring "$d/keyring" --gen-key -n mon. --cap mon 'allow *' >/dev/null
	monmaptool --create --fsid "$fsid" --addv a "[v2:127.0.0.1:$mon2,v1:127.0.0.1:$mon1]" \
		"$d/monmap" >/dev/null
	ceph-mon -c "$d/ceph.conf" --mkfs -i a --monmap "$d/monmap" --keyring "$d/keyring" ||
		fail "ceph-mon --mkfs failed"
	ceph-mon -c "$d/ceph.conf" -i a || fail "ceph-mon did not start: $(tail -5 "$d/log/mon.a.log")"
	uuid=$(python3 -c 'import uuid; print(uuid.uuid4())')
	id=$(rgw_ceph osd new "$uuid") || fail "ceph osd new failed"
	mkdir -p "$d/osd/$id"
	ceph-osd -c "$d/ceph.conf" -i "$id" --mkfs --osd-uuid "$uuid" >/dev/null 2>&1 ||
		fail "ceph-osd --mkfs failed: $(tail -5 "$d/log/osd.$id.log")"
	ceph-osd -c "$d/ceph.conf" -i "$id" >/dev/null 2>&1 ||
		fail "ceph-osd did not start: $(tail -5 "$d/log/osd.$id.log")"
	out=
	for i in $(seq 1 300); do
		out=$(rgw_ceph osd stat -f json 2>/dev/null || true)
		[[ $out == *'"num_up_osds":1'* ]] && break
		sleep 0.2
	done
	[[ $out == *'"num_up_osds":1'* ]] || fail "the OSD never came up: $out"
	rgw_up
	# As client.admin: `-n client.rgw` would collide with radosgw's admin socket.
	timeout 60 radosgw-admin -c "$d/ceph.conf" user create --uid=unhex --display-name=unhex \
		--access-key="$RGW_ACCESS_KEY" --secret-key="$RGW_SECRET_KEY" >/dev/null ||
		fail "radosgw-admin user create failed"
	note "Ceph RGW on $RGW_URL (mon $mon2/$mon1, osd.$id memstore)"
}

# rgw_guard: the daemons fork away from the test, so a test that dies
# without its EXIT trap (kill -9; ctest's timeout kills the test and its
# children, not these) would leave a monitor, an OSD and radosgw running
# and $WORK on disk.  A watchdog, forked twice so that it is nobody's
# child either, waits for the test's shell to go and then kills what the
# pid files still name (rgw_stop removes them: after a normal end there is
# nothing left to kill) and removes $WORK.  Called by rgw_start.
rgw_guard() {
	local owner=$$ dir=$RGW_DIR work=$WORK
	( (
		set +e
		trap '' HUP INT TERM
		while kill -0 "$owner" 2>/dev/null; do sleep 2; done
		for f in "$dir"/run/*.pid; do
			[ -f "$f" ] && kill -KILL "$(cat "$f")"
		done
		rm -rf "$work"
	) </dev/null >/dev/null 2>&1 & )
}

# rgw_up: starts radosgw on the cluster of rgw_start (again, after
# rgw_down: the same port, the same data in the OSD) and returns once it
# answers.
rgw_up() {
	local out i
	# radosgw forks into the background once it serves.
	radosgw -c "$RGW_DIR/ceph.conf" -n client.rgw >/dev/null 2>&1 ||
		fail "radosgw did not start: $(tail -5 "$RGW_DIR/log/client.rgw.log")"
	out=
	for i in $(seq 1 600); do
		out=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$RGW_URL/" || true)
		[ "$out" = 200 ] && break
		sleep 0.2
	done
	[ "$out" = 200 ] || fail "radosgw on $RGW_PORT does not answer (HTTP $out)"
}

# rgw_down: terminates radosgw alone (the monitor and the OSD keep the
# data): its port then refuses connections, until rgw_up.
rgw_down() {
	[ -n "$(rgw_pid client.rgw)" ] || fail "radosgw wrote no pid file"
	rgw_end "$RGW_DIR/run/client.rgw.pid"
	[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$RGW_URL/" || true)" = 000 ] ||
		fail "radosgw on $RGW_PORT still answers after it was stopped"
}

# rgw_s3 BUCKET: creates BUCKET, exports the test user's keys as the AWS
# variables and sets S3 to the `unhex serve` flags naming it (path style).
rgw_s3() {
	rgw_bucket "$1"
	export AWS_ACCESS_KEY_ID=$RGW_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$RGW_SECRET_KEY
	unset AWS_SESSION_TOKEN AWS_PROFILE
	S3=(--storage.backend s3 --storage.s3.endpoint "$RGW_URL" --storage.s3.bucket "$1"
		--storage.s3.path-style)
}

rgw_pid() { # NAME: the pid in the daemon's own pid file, "" if none
	cat "$RGW_DIR/run/$1.pid" 2>/dev/null || true
}

# rgw_request METHOD PATH OUT [CURL ARGS...]: a request signed as the test
# user to $RGW_URL/PATH (bucket/key), its body into OUT; prints the HTTP
# status.
rgw_request() {
	curl -s -o "$3" -w '%{http_code}' --max-time 30 -X "$1" \
		--aws-sigv4 "aws:amz:$RGW_REGION:s3" --user "$RGW_ACCESS_KEY:$RGW_SECRET_KEY" \
		-H "x-amz-content-sha256: UNSIGNED-PAYLOAD" "${@:4}" "$RGW_URL/$2" || true
}

rgw_bucket() {
	local code
	code=$(rgw_request PUT "$1" "$WORK/rgw-bucket.out")
	[ "$code" = 200 ] || fail "cannot create bucket $1 (HTTP $code): $(cat "$WORK/rgw-bucket.out")"
}

rgw_pause() {
	local p
	p=$(rgw_pid client.rgw)
	[ -n "$p" ] || fail "radosgw wrote no pid file"
	kill -STOP "$p"
}

rgw_resume() {
	local p
	p=$(rgw_pid client.rgw)
	[ -n "$p" ] && kill -CONT "$p"
}

# rgw_end PIDFILE: SIGTERM to the daemon of PIDFILE, SIGKILL if it is still
# there 10 s later; the pid file is removed.
rgw_end() {
	local p i
	p=$(cat "$1" 2>/dev/null || true)
	if [ -n "$p" ] && kill -TERM "$p" 2>/dev/null; then
		# Not our child (it daemonized): poll until the pid is gone.
		for i in $(seq 1 100); do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.1
		done
		kill -0 "$p" 2>/dev/null && kill -KILL "$p" 2>/dev/null
	fi
	rm -f "$1"
}

rgw_stop() {
	local f
	[ -n "$RGW_DIR" ] && [ -d "$RGW_DIR/run" ] || return 0
	rgw_resume 2>/dev/null || true
	for f in "$RGW_DIR"/run/client.rgw.pid "$RGW_DIR"/run/osd.*.pid "$RGW_DIR"/run/mon.*.pid; do
		[ -f "$f" ] && rgw_end "$f"
	done
	RGW_DIR=
}
