#!/usr/bin/env bash
# A one-node Kubernetes cluster on this host, for rttlab's second runtime:
# its binaries built from the Go module proxy (no registry, no kind, no
# k3s), a containerd of its own beside any Docker engine, Debian's CNI
# plugins, and images imported from tars rttlab makes itself.
#
#   .ci/kube.sh build    build kube-apiserver, kube-controller-manager,
#                        kube-scheduler, kubelet, kube-proxy, kubectl and
#                        etcd (and CoreDNS) into ~/.cache/rttlab/kube/<versions>/bin,
#                        once per version
#   .ci/kube.sh up       install what is missing from Debian, make the
#                        certificates, images and configs, start
#                        containerd, etcd, the control plane and a kubelet,
#                        wait for the node to be Ready and a test pod to
#                        run, print the time of each phase and, last,
#                        KUBECONFIG=<path>
#   .ci/kube.sh join     add a second node: a kubelet and a containerd of
#                        its own in the network namespace rttlab-node2,
#                        its pods on a bridge and subnet of their own
#                        (RTTLAB_KUBE_POD_CIDR2, 10.231.1.0/24), routed to
#                        the first node over the veth link rttlab-n2
#                        (RTTLAB_KUBE_LINK_CIDR, 10.233.0.0/30); its name
#                        is RTTLAB_KUBE_NODE2 (the first node's, -2)
#   .ci/kube.sh leave    stop the second node and remove what join added
#   .ci/kube.sh down     stop all that up started (and join) and remove
#                        its mounts, bridge, iptables chains, cgroups,
#                        sysctl changes and files
#   .ci/kube.sh status   what runs, and the KUBECONFIG line when it is up
#   .ci/kube.sh import IMAGE...
#                        copy the images from the Docker engine (one
#                        docker save) into the cluster's containerd (each
#                        node's), for pods that name them with
#                        imagePullPolicy: Never; exit status 3 when no
#                        Docker engine answers or it lacks an image, with
#                        the reason in one line
#
# Everything up makes lives in /var/lib/rttlab-kube (certificates,
# kubeconfigs, etcd's data, containerd's root, the kubelet's root, logs)
# and /run/rttlab-kube (containerd's socket and state, pid files, what the
# host looked like before up). A Docker engine, its containerd and its
# iptables rules are left alone.
#
# The images: rttlab.local/pause:1 (every pod's sandbox) and
# rttlab.local/shell:1 (Debian's static busybox, entrypoint /bin/sh);
# pods name them with imagePullPolicy: Never, and more are imported with
# ctr --address /run/rttlab-kube/containerd.sock -n k8s.io images import,
# or from the Docker engine with .ci/kube.sh import (rttlab/agent:latest,
# the node agent's image, by .ci/kubetest.sh).
# kube-proxy is built but not started: pods reach each other by their
# addresses, not through Services.
#
# KUBE_VERSION, ETCD_VERSION: what build builds (1.35.4, 3.6.8).
# RTTLAB_KUBE_CACHE: the build cache (~/.cache/rttlab/kube).
# RTTLAB_KUBE_POD_CIDR: the pods' subnet (10.231.0.0/24), on the bridge
# rttlab-kube0; RTTLAB_KUBE_SERVICE_CIDR: the services' (10.232.0.0/16).
# RTTLAB_KUBE_NODE: the node's name (the host name, lower case).
set -euo pipefail

KUBE_VERSION=${KUBE_VERSION:-1.35.4}
ETCD_VERSION=${ETCD_VERSION:-3.6.8}
COREDNS_VERSION=${COREDNS_VERSION:-1.12.4}
REGISTRY_VERSION=${REGISTRY_VERSION:-3.1.2}
GO=${GO:-go}
cache=${RTTLAB_KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rttlab/kube}
out=$cache/v$KUBE_VERSION-etcd$ETCD_VERSION
bin=$out/bin
state=/var/lib/rttlab-kube
run=/run/rttlab-kube
sock=$run/containerd.sock
pod_cidr=${RTTLAB_KUBE_POD_CIDR:-10.231.0.0/24}
service_cidr=${RTTLAB_KUBE_SERVICE_CIDR:-10.232.0.0/16}
bridge=rttlab-kube0
network=rttlab-kube
# The second node (join): its network namespace, the link to it (the
# first node's end is link2, with the link's first address), its pods'
# subnet on its own bridge, its folders.
ns2=rttlab-node2
link2=rttlab-n2
link_cidr=${RTTLAB_KUBE_LINK_CIDR:-10.233.0.0/30}
pod_cidr2=${RTTLAB_KUBE_POD_CIDR2:-10.231.1.0/24}
bridge2=rttlab-kube1
state2=$state/node2
run2=$run/node2
pause_image=rttlab.local/pause:1
shell_image=rttlab.local/shell:1
# The ports the cluster listens on: etcd's client and peer ports on
# loopback, the API server's, the controller manager's, the scheduler's,
# the kubelet's and its health port.
registry_port=${RTTLAB_KUBE_REGISTRY_PORT:-5000}
ports="2379 2380 6443 10257 10259 10250 10248 $registry_port"
coredns=coredns-$COREDNS_VERSION
registry=registry-$REGISTRY_VERSION
bins="kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl etcd $coredns $registry"
# The processes up starts, in order; down stops them in the reverse order.
components="registry containerd etcd kube-apiserver coredns kube-controller-manager kube-scheduler kubelet"
# What join starts.
components2="containerd2 kubelet2"
# The kernel settings the kubelet and the CNI bridge plugin change, put
# back by down.
sysctls="net.ipv4.ip_forward vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops kernel.keys.root_maxkeys kernel.keys.root_maxbytes"

log() { printf '[kube] %s\n' "$*" >&2; }
die() { printf 'rttlab kube: %s\n' "$*" >&2; exit 1; }
# bad is die for a setting the user gave: exit status 2, as for usage.
bad() { printf 'rttlab kube: %s\n' "$*" >&2; exit 2; }
usage() {
  echo "usage: .ci/kube.sh build|up|join|leave|down|status|import IMAGE..." >&2
  exit 2
}
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

# ---------------------------------------------------------------- build

# module_dir NAME empties $work/NAME, where build writes a module's main.
module_dir() { rm -rf "${work:?}/$1" && mkdir -p "$work/$1"; }

# module_build NAME MODULE VERSION PACKAGE BINARY builds PACKAGE of a
# module of its own in $work/NAME that requires MODULE at VERSION (its
# main written there first) into $bin/BINARY.
module_build() {
  local name=$1 module=$2 version=$3 pkg=$4 binary=$5 s
  printf 'module rttlab.local/%sbuild\ngo 1.24.0\nrequire %s v%s\n' "$name" "$module" "$version" >"$work/$name/go.mod"
  s=$(now)
  (cd "$work/$name" && "$GO" mod tidy >/dev/null && "$GO" build -trimpath -ldflags "-s -w" -o "$bin/$binary.tmp" "$pkg") ||
    die "building $name $version failed (see above)"
  mv "$bin/$binary.tmp" "$bin/$binary"
  log "$name in $(secs "$s" "$(now)") s"
}

build() {
  local missing="" b
  for b in $bins; do [ -x "$bin/$b" ] || missing="$missing $b"; done
  if [ -z "$missing" ]; then
    log "binaries of v$KUBE_VERSION and etcd $ETCD_VERSION cached in $bin"
    return 0
  fi
  command -v "$GO" >/dev/null 2>&1 || die "no Go toolchain ($GO) to build$missing: put go on PATH or set GO=/path/to/go"
  mkdir -p "$cache" "$bin"
  # One build at a time: a second waits for the first and then finds
  # its binaries.
  exec 9>"$cache/.build.lock"
  if ! flock -n 9; then
    log "another build holds $cache/.build.lock; waiting for it"
    flock 9
    missing=""
    for b in $bins; do [ -x "$bin/$b" ] || missing="$missing $b"; done
    [ -n "$missing" ] || { log "built by the other build into $bin"; return 0; }
  fi
  local work=$out/src t0 s
  export CGO_ENABLED=0 GOFLAGS=-mod=mod GOTOOLCHAIN=local
  t0=$(now)
  case "$missing" in
  *kube*)
    # A go.sum is left by an earlier build of this version (-mod=mod
    # completes it for a binary it lacks).
    if [ ! -f "$work/kube/.ready" ] && [ ! -f "$work/kube/go.sum" ]; then
      rm -rf "$work/kube" && mkdir -p "$work/kube"
      # The staging modules of k8s.io/kubernetes are replaced in its own
      # go.mod by folders of its repository; a module that requires it
      # takes each from the proxy at the matching v0 version instead.
      local mod
      mod=$("$GO" mod download -json "k8s.io/kubernetes@v$KUBE_VERSION" | sed -n 's/.*"GoMod": "\(.*\)",/\1/p')
      [ -f "$mod" ] || die "could not download k8s.io/kubernetes@v$KUBE_VERSION from the module proxy (GOPROXY=$("$GO" env GOPROXY)); check the network or KUBE_VERSION"
      {
        echo "module rttlab.local/kubebuild"
        echo "go $("$GO" env GOVERSION | sed 's/^go//; s/^\([0-9]*\.[0-9]*\).*/\1/').0"
        echo "require k8s.io/kubernetes v$KUBE_VERSION"
        sed -n 's#^\s*\(k8s.io/[a-z0-9-]*\) => ./staging/src/k8s.io/.*#replace \1 => \1 v0.'"${KUBE_VERSION#1.}"'#p' "$mod"
      } >"$work/kube/go.mod"
      cat >"$work/kube/tools.go" <<'GO'
//go:build tools

package kubebuild

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
GO
      (cd "$work/kube" && { "$GO" mod tidy -e >/dev/null 2>&1 || true; } && "$GO" mod download) ||
        die "downloading the modules of Kubernetes v$KUBE_VERSION failed (see above)"
      touch "$work/kube/.ready"
      log "modules in $(secs "$t0" "$(now)") s"
    fi
    local ld="-s -w -X k8s.io/component-base/version.gitVersion=v$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${KUBE_VERSION#1.}"
    ld="$ld -X k8s.io/component-base/version.gitTreeState=clean -X k8s.io/client-go/pkg/version.gitVersion=v$KUBE_VERSION"
    for b in kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl; do
      [ -x "$bin/$b" ] && continue
      s=$(now)
      (cd "$work/kube" && "$GO" build -trimpath -ldflags "$ld" -o "$bin/$b.tmp" "k8s.io/kubernetes/cmd/$b") ||
        die "building $b failed (see above)"
      mv "$bin/$b.tmp" "$bin/$b"
      log "$b in $(secs "$s" "$(now)") s"
    done
    ;;
  esac
  if [ ! -x "$bin/etcd" ]; then
    module_dir etcd
    cat >"$work/etcd/main.go" <<'GO'
// Command etcd is etcd's server, built from its module.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
    module_build etcd go.etcd.io/etcd/server/v3 "$ETCD_VERSION" . etcd
  fi
  if [ ! -x "$bin/$coredns" ]; then
    # The cluster's DNS (Services and pods by name, as a user's manifest
    # expects): CoreDNS with the plugins it needs.
    module_dir coredns
    cat >"$work/coredns/main.go" <<'GO'
// Command coredns is CoreDNS with the plugins a one-node cluster's DNS
// needs, built from its module.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/ready"
)

func init() { dnsserver.Directives = []string{"bind", "ready", "errors", "kubernetes"} }

func main() { coremain.Run() }
GO
    module_build coredns github.com/coredns/coredns "$COREDNS_VERSION" . "$coredns"
  fi
  if [ ! -x "$bin/$registry" ]; then
    # An image registry beside the cluster (distribution's), where
    # rttlab run --registry pushes the images a run needs and the node's
    # containerd pulls them from.
    module_dir registry
    cat >"$work/registry/tools.go" <<'GO'
//go:build tools

package registrybuild

import _ "github.com/distribution/distribution/v3/cmd/registry"
GO
    module_build registry github.com/distribution/distribution/v3 "$REGISTRY_VERSION" \
      github.com/distribution/distribution/v3/cmd/registry "$registry"
  fi
  log "built$missing in $(secs "$t0" "$(now)") s into $bin"
}

# ---------------------------------------------------------------- images

# image_tar REF OUT ROOT ARCH ENTRYPOINT_JSON writes ROOT as a one-layer
# image named REF in the docker-archive format (what docker save writes
# and ctr images import reads) to OUT.
image_tar() {
  local ref=$1 outf=$2 root=$3 arch=$4 entry=$5 tmp diff config cfg
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/rttlab-kube-image.XXXXXX")
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$root" -cf "$tmp/layer.tar" .
  diff=$(sha256sum "$tmp/layer.tar" | cut -d' ' -f1)
  mkdir "$tmp/$diff" && mv "$tmp/layer.tar" "$tmp/$diff/layer.tar"
  config='{"architecture":"'$arch'","os":"linux","config":{"Env":["PATH=/bin"],"Entrypoint":'$entry'},"rootfs":{"type":"layers","diff_ids":["sha256:'$diff'"]}}'
  cfg=$(printf '%s' "$config" | sha256sum | cut -d' ' -f1)
  printf '%s' "$config" >"$tmp/$cfg.json"
  printf '[{"Config":"%s.json","RepoTags":["%s"],"Layers":["%s/layer.tar"]}]' "$cfg" "$ref" "$diff" >"$tmp/manifest.json"
  tar --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$tmp" -cf "$outf.tmp" manifest.json "$cfg.json" "$diff"
  mv "$outf.tmp" "$outf"
  rm -rf "$tmp"
}

# images makes the pause image (a static Go program that holds a pod's
# namespaces, reaps the children it inherits and exits on SIGTERM or
# SIGINT) and the shell image (Debian's static busybox, unpacked from its
# package, not installed) into the cache, once.
images() {
  local dir=$cache/images arch tmp
  arch=$(dpkg --print-architecture 2>/dev/null || "$GO" env GOARCH)
  mkdir -p "$dir"
  if [ ! -f "$dir/pause.tar" ]; then
    command -v "$GO" >/dev/null 2>&1 || die "no Go toolchain ($GO) to build the pause image: put go on PATH or set GO=/path/to/go"
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/rttlab-kube-pause.XXXXXX")
    mkdir -p "$tmp/src" "$tmp/root"
    printf 'module rttlab.local/pause\n\ngo 1.24.0\n' >"$tmp/src/go.mod"
    cat >"$tmp/src/main.go" <<'GO'
// Command pause is the sandbox process of rttlab's Kubernetes pods: it
// holds the pod's namespaces, reaps the children it inherits as the pod's
// first process, and exits on SIGTERM or SIGINT.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for s := range sigs {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
GO
    (cd "$tmp/src" && CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-mod=mod "$GO" build -trimpath -ldflags "-s -w" -o "$tmp/root/pause" .) ||
      die "building the pause image's program failed (see above)"
    image_tar "$pause_image" "$dir/pause.tar" "$tmp/root" "$arch" '["/pause"]'
    rm -rf "$tmp"
  fi
  if [ ! -f "$dir/shell.tar" ]; then
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/rttlab-kube-shell.XXXXXX")
    if ! (cd "$tmp" && apt-get download -o APT::Sandbox::User=root busybox-static >/dev/null 2>&1); then
      apt-get update -qq >/dev/null 2>&1 || true
      (cd "$tmp" && apt-get download -o APT::Sandbox::User=root busybox-static >/dev/null) ||
        die "could not download busybox-static from Debian's archive for the shell image; check apt's sources"
    fi
    mkdir -p "$tmp/x" "$tmp/root/bin" "$tmp/root/tmp" "$tmp/root/proc" "$tmp/root/sys" "$tmp/root/dev" "$tmp/root/etc"
    dpkg-deb -x "$tmp"/busybox-static_*.deb "$tmp/x"
    cp "$tmp/x/bin/busybox" "$tmp/root/bin/busybox"
    local a
    for a in $("$tmp/root/bin/busybox" --list); do
      [ "$a" = busybox ] || ln -s busybox "$tmp/root/bin/$a"
    done
    chmod 1777 "$tmp/root/tmp"
    image_tar "$shell_image" "$dir/shell.tar" "$tmp/root" "$arch" '["/bin/sh"]'
    rm -rf "$tmp"
  fi
}

# ---------------------------------------------------------------- certificates

# cert NAME CN O SANS USAGE signs NAME.crt (ECDSA P-256, 10 years) with
# the cluster's CA: SANS is a subjectAltName list or empty, USAGE the
# extended key usages.
cert() {
  local name=$1 cn=$2 o=$3 sans=$4 usage=$5 subj="/CN=$2" pki=$state/pki
  [ -n "$o" ] && subj="/O=$o/CN=$cn"
  openssl req -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
    -keyout "$pki/$name.key" -out "$pki/$name.csr" -subj "$subj" 2>/dev/null
  {
    echo "basicConstraints=critical,CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    echo "extendedKeyUsage=$usage"
    [ -z "$sans" ] || echo "subjectAltName=$sans"
  } >"$pki/$name.ext"
  openssl x509 -req -in "$pki/$name.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -set_serial "0x$(openssl rand -hex 16)" \
    -days 3650 -extfile "$pki/$name.ext" -out "$pki/$name.crt" 2>/dev/null
  rm -f "$pki/$name.csr" "$pki/$name.ext"
}

# kubeconfig NAME USER [SERVER [DIR]] writes DIR/NAME.kubeconfig (DIR:
# the state folder) for the certificate NAME and the API server at
# SERVER (default: on the loopback), with the certificates inside it so
# that it can be copied anywhere.
kubeconfig() {
  local name=$1 user=$2 server=${3:-https://127.0.0.1:6443} out=${4:-$state} pki=$state/pki
  cat >"$out/$name.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: rttlab-kube
  cluster:
    server: $server
    certificate-authority-data: $(base64 -w0 "$pki/ca.crt")
users:
- name: $user
  user:
    client-certificate-data: $(base64 -w0 "$pki/$name.crt")
    client-key-data: $(base64 -w0 "$pki/$name.key")
contexts:
- name: rttlab-kube
  context:
    cluster: rttlab-kube
    user: $user
current-context: rttlab-kube
EOF
  chmod 600 "$out/$name.kubeconfig"
}

certs() {
  local pki=$state/pki
  mkdir -p "$pki" && chmod 700 "$pki"
  openssl req -x509 -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -keyout "$pki/ca.key" \
    -out "$pki/ca.crt" -days 3650 -subj "/CN=rttlab-kube-ca" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" 2>/dev/null
  local svc_ip
  svc_ip=$(first_ip "$service_cidr")
  cert apiserver kube-apiserver "" \
    "IP:127.0.0.1,IP:$node_ip,IP:$svc_ip,DNS:localhost,DNS:$node,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local" serverAuth
  # The API server reaches the kubelet (exec, logs, port-forward) as a
  # member of system:masters.
  cert apiserver-kubelet-client kube-apiserver-kubelet-client system:masters "" clientAuth
  cert admin rttlab-admin system:masters "" clientAuth
  cert controller-manager system:kube-controller-manager "" "" clientAuth
  cert scheduler system:kube-scheduler "" "" clientAuth
  cert kubelet-client "system:node:$node" system:nodes "" clientAuth
  cert kubelet "$node" "" "IP:$node_ip,IP:127.0.0.1,DNS:$node,DNS:localhost" serverAuth
  openssl ecparam -name prime256v1 -genkey -noout -out "$pki/sa.key" 2>/dev/null
  openssl ec -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
  kubeconfig admin rttlab-admin
  kubeconfig controller-manager system:kube-controller-manager
  kubeconfig scheduler system:kube-scheduler
  kubeconfig kubelet-client "system:node:$node"
}

# ---------------------------------------------------------------- addresses

ip2int() {
  local IFS=.
  # shellcheck disable=SC2086
  set -- $1
  echo $((($1 << 24) + ($2 << 16) + ($3 << 8) + $4))
}
int2ip() { echo "$((($1 >> 24) & 255)).$((($1 >> 16) & 255)).$((($1 >> 8) & 255)).$(($1 & 255))"; }
# host_routes lists the destinations of this host's IPv4 routes, every
# table's.
host_routes() {
  ip -4 route show table all | awk '$1 ~ /^[0-9]/ {print $1} $1 ~ /^(unicast|blackhole|prohibit|unreachable|throw)$/ {print $2}'
}
# host_ip is this host's address on its default route (the loopback
# without one).
host_ip() {
  local ip
  ip=$(ip -4 route get 1.1.1.1 2>/dev/null | sed -n 's/.* src \([0-9.]*\).*/\1/p')
  echo "${ip:-127.0.0.1}"
}
# check_node_name NAME VAR refuses a node name that is not a DNS label.
check_node_name() {
  [[ $1 =~ ^[a-z0-9]([-a-z0-9]*[a-z0-9])?$ ]] || bad "node name '$1' is not a DNS label: set $2=<lower-case name>"
}
first_ip() { int2ip $(($(ip2int "${1%/*}") + 1)); }
valid_cidr() { [[ $1 =~ ^([0-9]{1,3}\.){3}[0-9]{1,3}/([0-9]|[12][0-9]|3[0-2])$ ]]; }
# overlaps A B says whether the subnets A and B share an address.
overlaps() {
  local a=${1%/*} al=${1#*/} b=${2%/*} bl=${2#*/} l m
  [ "$al" = "$1" ] && al=32
  [ "$bl" = "$2" ] && bl=32
  l=$((al < bl ? al : bl))
  m=$(((0xffffffff << (32 - l)) & 0xffffffff))
  [ $(($(ip2int "$a") & m)) -eq $(($(ip2int "$b") & m)) ]
}

# ---------------------------------------------------------------- processes

pidof_component() {
  local f=$run/pid/$1 pid
  [ -f "$f" ] || return 1
  pid=$(cat "$f")
  # A pid that outlived its process may have been given to another one.
  [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "$2" || return 1
  echo "$pid"
}
alive() {
  case $1 in
  containerd) pidof_component containerd "$run/containerd.toml" ;;
  containerd2) pidof_component containerd2 "$run2/containerd.toml" ;;
  kubelet2) pidof_component kubelet2 "$bin/kubelet" ;;
  *) pidof_component "$1" "$bin/$1" ;;
  esac
}

# start NAME COMMAND... starts COMMAND in a session of its own (Ctrl-C
# in the terminal that ran up does not reach it), its output in
# $state/log/NAME.log, and records its pid.
start() {
  local name=$1
  shift
  # Not with the lock's descriptor: the lock goes when up ends.
  setsid "$@" >"$state/log/$name.log" 2>&1 </dev/null 8>&- &
  echo $! >"$run/pid/$name"
}

# wait_for NAME SECONDS COMMAND... waits until COMMAND succeeds, and
# fails with the end of NAME's log if NAME exits or time runs out.
wait_for() {
  local name=$1 limit=$2 i
  shift 2
  for i in $(seq 1 $((limit * 4))); do
    "$@" >/dev/null 2>&1 && return 0
    # The pid just started: kill -0 (its command line is the script's
    # until the fork has run setsid).
    if [ -n "$name" ] && ! kill -0 "$(cat "$run/pid/$name")" 2>/dev/null; then
      log "$name exited; the end of $state/log/$name.log:"
      tail -n 25 "$state/log/$name.log" >&2 || true
      die "$name did not start (the line above says why); .ci/kube.sh down cleans up"
    fi
    sleep 0.25
  done
  if [ -n "$name" ]; then
    log "the end of $state/log/$name.log:"
    tail -n 25 "$state/log/$name.log" >&2 || true
  fi
  die "timed out after $limit s waiting for: $*; .ci/kube.sh down cleans up"
}

# stop_pid PID... asks each PID to stop (SIGTERM), waits up to 15 s for
# all of them, and kills those still running.
stop_pid() {
  local pid i left
  [ $# -gt 0 ] || return 0
  kill -TERM "$@" 2>/dev/null || true
  for i in $(seq 1 150); do
    left=""
    for pid in "$@"; do kill -0 "$pid" 2>/dev/null && left="$left $pid"; done
    [ -n "$left" ] || return 0
    sleep 0.1
  done
  log "pids$left did not stop in 15 s; killing them"
  # shellcheck disable=SC2086
  kill -KILL $left 2>/dev/null || true
  sleep 0.2
}

kubectl_() { "$bin/kubectl" --kubeconfig "$state/admin.kubeconfig" "$@"; }
api() { curl -fsS --max-time 5 --cacert "$state/pki/ca.crt" --cert "$state/pki/admin.crt" --key "$state/pki/admin.key" "https://127.0.0.1:6443$1"; }

# ---------------------------------------------------------------- up

# containerd_config FILE STATE RUN writes a node's containerd config:
# its own root and opt folder under STATE, its state, sockets and runc
# root under RUN, its CNI config in STATE/cni.
containerd_config() {
  local restrict_oom=false capbnd
  # Without CAP_SYS_RESOURCE in the bounding set (some VM sandboxes drop
  # it) no process may lower its oom_score_adj, so runc fails to start a
  # pod's sandbox at containerd's -998 ("nsexec: failed to update
  # /proc/self/oom_score_adj: Permission denied"); containerd then keeps
  # every container's score at or above its own.
  capbnd=$(awk '$1 == "CapBnd:" {print $2}' /proc/self/status)
  if [ -n "$capbnd" ] && [ $(((0x$capbnd >> 24) & 1)) = 0 ]; then
    restrict_oom=true
    log "CAP_SYS_RESOURCE is not in this host's bounding set: containers keep an oom_score_adj of at least containerd's"
  fi
  cat >"$1" <<EOF
version = 2
root = "$2/containerd"
state = "$3/containerd"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.internal.v1.tracing"]

[grpc]
  address = "$3/containerd.sock"

[ttrpc]
  address = "$3/containerd-ttrpc.sock"

[plugins."io.containerd.internal.v1.opt"]
  path = "$2/opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$pause_image"
  netns_mounts_under_state_dir = true
  enable_selinux = false
  restrict_oom_score_adj = $restrict_oom
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$3/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$2/cni"
    max_conf_num = 1
  # The registry beside the cluster, over plain HTTP on the loopback.
  [plugins."io.containerd.grpc.v1.cri".registry.mirrors."127.0.0.1:$registry_port"]
    endpoint = ["http://127.0.0.1:$registry_port"]
EOF
}

# cni_config STATE BRIDGE SUBNET writes a node's pod network.
cni_config() {
  # The pods' network: Debian's bridge plugin on BRIDGE with the pod
  # subnet, portmap for hostPort, and firewall so that pods are
  # forwarded where Docker set the FORWARD policy to DROP.
  cat >"$1/cni/10-rttlab-kube.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "$network",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$2",
      "isGateway": true,
      "ipMasq": true,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "$3"}]],
        "routes": [{"dst": "0.0.0.0/0"}],
        "dataDir": "$1/ipam"
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}},
    {"type": "firewall"}
  ]
}
EOF
}

# kubelet_config STATE RUN CERT EXTRA writes a node's kubelet config
# into STATE, for the containerd under RUN and the serving certificate
# CERT; EXTRA is more of the config (YAML lines).
kubelet_config() {
  cat >"$1/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# This host has cgroup v1 and no systemd.
failCgroupV1: false
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://$2/containerd.sock
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: $state/pki/ca.crt
authorization:
  mode: Webhook
tlsCertFile: $state/pki/$3.crt
tlsPrivateKeyFile: $state/pki/$3.key
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
clusterDomain: cluster.local
clusterDNS: [$node_ip]
podLogsDir: $1/pod-logs
failSwapOn: false
protectKernelDefaults: false
rotateCertificates: false
serverTLSBootstrap: false
# A lab node: no eviction because a disk is fuller than usual, and no
# image garbage collection (the images cannot be pulled again).
evictionHard:
  memory.available: "100Mi"
  nodefs.available: "1%"
  imagefs.available: "1%"
  nodefs.inodesFree: "1%"
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
$4
EOF
}


node_ready() {
  kubectl_ get node "${1:-$node}" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null | grep -qx True
}
# test_pod NAME COMPONENT [NODE] runs the pod NAME of the pause image,
# never pulled, in the default namespace (on NODE when given), waits up
# to 90 s until it runs (COMPONENT's log says why not) and sets pod_ip to
# its address.
test_pod() {
  kubectl_ apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: $1
  namespace: default
spec:
  nodeName: ${3:-null}
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 1
  containers:
  - name: pause
    image: $pause_image
    imagePullPolicy: Never
EOF
  wait_for "$2" 90 pod_running "$1"
  pod_ip=$(kubectl_ -n default get pod "$1" -o 'jsonpath={.status.podIP}')
}
pod_running() {
  kubectl_ -n default get pod "${1:-rttlab-up-check}" -o 'jsonpath={.status.phase}' 2>/dev/null | grep -qx Running
}

# print_access prints how to reach the cluster: its registry, its
# kubectl and, last, KUBECONFIG=<path>.
print_access() {
  echo "registry: 127.0.0.1:$registry_port (rttlab run --runtime kube --registry 127.0.0.1:$registry_port pushes a run's images there)"
  echo "kubectl: $bin/kubectl"
  echo "KUBECONFIG=$state/admin.kubeconfig"
}

# print_phases WHAT START prints the time of each phase of WHAT (up,
# join...) and the total since START.
print_phases() {
  local i
  echo "kube $1, time per phase:"
  for i in "${!phase_labels[@]}"; do
    printf '  %-44s %6s s\n' "${phase_labels[$i]}" "${phase_secs[$i]}"
  done
  printf '  %-44s %6s s\n' total "$(secs "$2" "$(now)")"
}

phase_labels=() phase_secs=()
phase_t=""
phase() {
  local t
  t=$(now)
  phase_labels+=("$1")
  phase_secs+=("$(secs "$phase_t" "$t")")
  phase_t=$t
}

up() {
  [ "$(id -u)" = 0 ] || die "up starts containerd and a kubelet: run it as root (sudo .ci/kube.sh up)"
  local b
  for b in $bins; do
    [ -x "$bin/$b" ] || die "$bin/$b is missing: run .ci/kube.sh build first (or make cluster)"
  done
  node=${RTTLAB_KUBE_NODE:-$(hostname | tr 'A-Z_.' 'a-z--')}
  check_node_name "$node" RTTLAB_KUBE_NODE
  valid_cidr "$pod_cidr" || bad "RTTLAB_KUBE_POD_CIDR=$pod_cidr is not an IPv4 subnet: set it like 10.231.0.0/24"
  valid_cidr "$service_cidr" || bad "RTTLAB_KUBE_SERVICE_CIDR=$service_cidr is not an IPv4 subnet: set it like 10.232.0.0/16"

  if [ -d "$run/pid" ]; then
    local c down_ones=""
    for c in $components; do alive "$c" >/dev/null || down_ones="$down_ones $c"; done
    if [ -z "$down_ones" ] && node_ready; then
      log "already up: node $node is Ready"
      print_access
      return 0
    fi
    die "a cluster is partly up (not running:${down_ones:- none, but node $node is not Ready}): run .ci/kube.sh down first"
  fi
  if [ -e "$state" ]; then
    die "$state is left from an earlier cluster: run .ci/kube.sh down first"
  fi

  phase_t=$(now)
  local t_start=$phase_t
  # Debian's packages, where missing.
  local need=()
  command -v containerd >/dev/null 2>&1 || need+=(containerd)
  command -v runc >/dev/null 2>&1 || need+=(runc)
  [ -x /usr/lib/cni/bridge ] || need+=(containernetworking-plugins)
  command -v iptables >/dev/null 2>&1 || need+=(iptables)
  command -v openssl >/dev/null 2>&1 || need+=(openssl)
  command -v curl >/dev/null 2>&1 || need+=(curl)
  command -v ip >/dev/null 2>&1 || need+=(iproute2)
  command -v ss >/dev/null 2>&1 || need+=(iproute2)
  if [ ${#need[@]} -gt 0 ]; then
    log "installing ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  fi
  phase "Debian packages"

  # Refusals before anything is changed.
  local p busy=""
  for p in $ports; do
    if ss -Hltn "sport = :$p" | grep -q .; then busy="$busy $p"; fi
  done
  [ -z "$busy" ] || die "port(s)$busy taken (ss -ltnp says by what): the cluster needs $ports free"
  local route
  while read -r route; do
    [ -n "$route" ] && [ "$route" != default ] || continue
    overlaps "$pod_cidr" "$route" && bad "the pod subnet $pod_cidr overlaps the route to $route: set RTTLAB_KUBE_POD_CIDR to a free subnet"
    overlaps "$service_cidr" "$route" && bad "the service subnet $service_cidr overlaps the route to $route: set RTTLAB_KUBE_SERVICE_CIDR to a free subnet"
  done < <(host_routes)
  overlaps "$pod_cidr" "$service_cidr" && bad "the pod subnet $pod_cidr and the service subnet $service_cidr overlap: set RTTLAB_KUBE_SERVICE_CIDR to another subnet"
  ip link show "$bridge" >/dev/null 2>&1 && die "a link named $bridge already exists (from an earlier cluster?): run .ci/kube.sh down, or ip link del $bridge"
  node_ip=$(host_ip)

  # What the host looked like, for down to return to.
  mkdir -p "$run/pid" "$run/host" "$state/log"
  local t
  for t in filter nat mangle raw; do
    iptables-save -t "$t" 2>/dev/null | sed -n 's/^:\([^ ]*\) .*/\1/p' >"$run/host/chains4.$t" || true
    ip6tables-save -t "$t" 2>/dev/null | sed -n 's/^:\([^ ]*\) .*/\1/p' >"$run/host/chains6.$t" || true
  done
  local s
  for s in $sysctls; do
    v=$(sysctl -n "$s" 2>/dev/null) && echo "$s=$v" >>"$run/host/sysctl"
  done
  [ -e /run/containerd ] && touch "$run/host/run-containerd"
  [ -e /var/log/containers ] && touch "$run/host/var-log-containers"
  [ -e /var/lib/cni ] && touch "$run/host/var-lib-cni"
  [ -e /var/lib/kubelet ] && touch "$run/host/var-lib-kubelet"
  for c in /sys/fs/cgroup/*/kubepods; do [ -e "$c" ] && echo "$c" >>"$run/host/cgroups"; done
  echo "$node" >"$run/node"
  echo "$pod_cidr" >"$run/pod_cidr"

  images
  phase "images (cached after the first up)"

  certs
  phase "certificates and kubeconfigs"

  # containerd's config: its own root, state and sockets beside any other
  # containerd, the CRI plugin on, cgroupfs (no systemd), rttlab's pause
  # image as every pod's sandbox, network namespaces under its state.
  mkdir -p "$state/cni" "$state/opt" "$state/pod-logs"
  containerd_config "$run/containerd.toml" "$state" "$run"
  cat >"$state/registry.yml" <<EOF
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $state/registry
http:
  addr: 127.0.0.1:$registry_port
EOF
  cni_config "$state" "$bridge" "$pod_cidr"
  kubelet_config "$state" "$run" kubelet ""
  phase "configs"

  start registry "$bin/$registry" serve "$state/registry.yml"
  wait_for registry 30 curl -fsS --max-time 2 "http://127.0.0.1:$registry_port/v2/"
  phase "registry"

  start containerd containerd --config "$run/containerd.toml"
  wait_for containerd 30 ctr --address "$sock" version
  phase "containerd"

  ctr --address "$sock" -n k8s.io images import "$cache/images/pause.tar" >/dev/null
  ctr --address "$sock" -n k8s.io images import "$cache/images/shell.tar" >/dev/null
  phase "image import"

  start etcd "$bin/etcd" --name "$node" --data-dir "$state/etcd" \
    --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
    --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
    --initial-cluster "$node=http://127.0.0.1:2380" --unsafe-no-fsync
  wait_for etcd 30 curl -fsS --max-time 2 http://127.0.0.1:2379/health
  phase "etcd"

  local pki=$state/pki
  start kube-apiserver "$bin/kube-apiserver" --etcd-servers http://127.0.0.1:2379 \
    --bind-address 0.0.0.0 --secure-port 6443 --advertise-address "$node_ip" \
    --client-ca-file "$pki/ca.crt" --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
    --kubelet-client-certificate "$pki/apiserver-kubelet-client.crt" --kubelet-client-key "$pki/apiserver-kubelet-client.key" \
    --kubelet-certificate-authority "$pki/ca.crt" --kubelet-preferred-address-types InternalIP,Hostname \
    --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-cluster-ip-range "$service_cidr" --authorization-mode Node,RBAC \
    --enable-admission-plugins NodeRestriction --allow-privileged=true --profiling=false
  wait_for kube-apiserver 90 api /readyz
  phase "kube-apiserver"

  # The cluster's DNS on the node's address, which every pod reaches
  # through its gateway (the kubelet's clusterDNS).
  cat >"$state/Corefile" <<EOF
cluster.local:53 {
    bind $node_ip
    ready 127.0.0.1:8181
    errors
    kubernetes cluster.local {
        kubeconfig $state/admin.kubeconfig
        pods insecure
    }
}
EOF
  start coredns "$bin/$coredns" -conf "$state/Corefile"
  wait_for coredns 60 curl -fsS --max-time 2 http://127.0.0.1:8181/ready
  phase "CoreDNS"

  start kube-controller-manager "$bin/kube-controller-manager" --kubeconfig "$state/controller-manager.kubeconfig" \
    --authentication-kubeconfig "$state/controller-manager.kubeconfig" --authorization-kubeconfig "$state/controller-manager.kubeconfig" \
    --bind-address 127.0.0.1 --leader-elect=false --use-service-account-credentials \
    --service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" \
    --cluster-signing-cert-file "$pki/ca.crt" --cluster-signing-key-file "$pki/ca.key" \
    --service-cluster-ip-range "$service_cidr" --profiling=false
  start kube-scheduler "$bin/kube-scheduler" --kubeconfig "$state/scheduler.kubeconfig" \
    --authentication-kubeconfig "$state/scheduler.kubeconfig" --authorization-kubeconfig "$state/scheduler.kubeconfig" \
    --bind-address 127.0.0.1 --leader-elect=false --profiling=false
  wait_for kube-controller-manager 60 curl -fsSk --max-time 2 https://127.0.0.1:10257/healthz
  wait_for kube-scheduler 60 curl -fsSk --max-time 2 https://127.0.0.1:10259/healthz
  phase "controller manager and scheduler"

  start kubelet "$bin/kubelet" --config "$state/kubelet.yaml" --kubeconfig "$state/kubelet-client.kubeconfig" \
    --root-dir "$state/kubelet" --hostname-override "$node" --node-ip "$node_ip" --v 1
  wait_for kubelet 120 node_ready
  phase "kubelet, node Ready"

  # A pod of the pause image, never pulled, on the pod network.
  wait_for "" 60 kubectl_ -n default get serviceaccount default
  local pod_ip
  test_pod rttlab-up-check kubelet
  phase "test pod Running (IP $pod_ip)"
  kubectl_ -n default delete pod rttlab-up-check --wait=true --timeout=60s >/dev/null
  phase "test pod deleted"

  echo
  print_phases up "$t_start"
  echo "node $node ($node_ip), pods $pod_cidr on $bridge, services $service_cidr"
  echo "images: $pause_image, $shell_image; import more with: ctr --address $sock -n k8s.io images import FILE.tar"
  print_access
}

# ---------------------------------------------------------------- join

# join adds a second node to the cluster that up started: a kubelet and a
# containerd of its own, in a network namespace of its own (rttlab-node2)
# with its own pod bridge and subnet, routed to the first node over a
# veth link, as two hosts on one network are. Both nodes share this
# host's kernel, clock and CPUs; what differs is every network hop
# between them, and which kubelet runs which pod.
join() {
  [ "$(id -u)" = 0 ] || die "join starts a second containerd and kubelet: run it as root"
  node=$(cat "$run/node" 2>/dev/null) || die "no cluster is up: run .ci/kube.sh up first"
  node_ready || die "node $node is not Ready: run .ci/kube.sh up first"
  node2=${RTTLAB_KUBE_NODE2:-$node-2}
  check_node_name "$node2" RTTLAB_KUBE_NODE2
  if [ -d "$run2" ]; then
    if alive containerd2 >/dev/null && alive kubelet2 >/dev/null && node_ready "$(cat "$run2/name")"; then
      log "already joined: node $(cat "$run2/name") is Ready"
      return 0
    fi
    die "a second node is partly up: run .ci/kube.sh leave first"
  fi
  valid_cidr "$pod_cidr2" || bad "RTTLAB_KUBE_POD_CIDR2=$pod_cidr2 is not an IPv4 subnet: set it like 10.231.1.0/24"
  valid_cidr "$link_cidr" || bad "RTTLAB_KUBE_LINK_CIDR=$link_cidr is not an IPv4 subnet: set it like 10.233.0.0/30"
  local pod_cidr1 route
  pod_cidr1=$(cat "$run/pod_cidr" 2>/dev/null || echo "$pod_cidr")
  overlaps "$pod_cidr2" "$pod_cidr1" && bad "the second node's pod subnet $pod_cidr2 overlaps the first's $pod_cidr1: set RTTLAB_KUBE_POD_CIDR2 to a free subnet"
  while read -r route; do
    [ -n "$route" ] && [ "$route" != default ] || continue
    overlaps "$pod_cidr2" "$route" && bad "the second node's pod subnet $pod_cidr2 overlaps the route to $route: set RTTLAB_KUBE_POD_CIDR2 to a free subnet"
    overlaps "$link_cidr" "$route" && bad "the link subnet $link_cidr overlaps the route to $route: set RTTLAB_KUBE_LINK_CIDR to a free subnet"
  done < <(host_routes)
  ip netns list | grep -qw "$ns2" && die "a network namespace $ns2 already exists: run .ci/kube.sh leave, or ip netns del $ns2"
  ip link show "$link2" >/dev/null 2>&1 && die "a link named $link2 already exists: run .ci/kube.sh leave, or ip link del $link2"
  node_ip=$(host_ip)
  local ip_a ip_b plen=${link_cidr#*/}
  ip_a=$(first_ip "$link_cidr")
  ip_b=$(int2ip $(($(ip2int "$ip_a") + 1)))
  phase_t=$(now)
  local t_start=$phase_t

  mkdir -p "$run2" "$state2/cni" "$state2/opt" "$state2/pod-logs" "$state2/log"
  echo "$node2" >"$run2/name"
  # The link: this host's end routes the second node's pods to it, the
  # second node's end is its default route. The pods of one node reach
  # those of the other by their own addresses (no masquerade between the
  # pod subnets), as a cluster's pod network does.
  ip netns add "$ns2"
  ip link add "$link2" type veth peer name eth0 netns "$ns2"
  ip addr add "$ip_a/$plen" dev "$link2"
  ip link set "$link2" up
  ip -n "$ns2" link set lo up
  ip -n "$ns2" addr add "$ip_b/$plen" dev eth0
  ip -n "$ns2" link set eth0 up
  ip -n "$ns2" route add default via "$ip_a"
  ip netns exec "$ns2" sysctl -q -w net.ipv4.ip_forward=1
  ip route add "$pod_cidr2" via "$ip_b" dev "$link2"
  iptables -I FORWARD -i "$link2" -j ACCEPT
  iptables -I FORWARD -o "$link2" -j ACCEPT
  iptables -t nat -I POSTROUTING -s "$pod_cidr1" -d "$pod_cidr2" -m comment --comment "$link2" -j RETURN
  ip netns exec "$ns2" iptables -t nat -I POSTROUTING -s "$pod_cidr2" -d "$pod_cidr1" -j RETURN
  # The kubelet's cgroups under a root of their own, beside the first
  # node's kubepods.
  local c
  for c in /sys/fs/cgroup/*/; do
    [ -e "$c/cgroup.procs" ] && mkdir -p "$c$ns2"
  done
  phase "link, routes, cgroups"

  cert "kubelet2-client" "system:node:$node2" system:nodes "" clientAuth
  cert kubelet2 "$node2" "" "IP:$ip_b,DNS:$node2" serverAuth
  kubeconfig kubelet2-client "system:node:$node2" "https://$node_ip:6443" "$state2"
  containerd_config "$run2/containerd.toml" "$state2" "$run2"
  cni_config "$state2" "$bridge2" "$pod_cidr2"
  kubelet_config "$state2" "$run2" kubelet2 "cgroupRoot: /$ns2"
  phase "certificates and configs"

  start containerd2 nsenter --net="/run/netns/$ns2" containerd --config "$run2/containerd.toml"
  wait_for containerd2 30 ctr --address "$run2/containerd.sock" version
  ctr --address "$run2/containerd.sock" -n k8s.io images import "$cache/images/pause.tar" >/dev/null
  ctr --address "$run2/containerd.sock" -n k8s.io images import "$cache/images/shell.tar" >/dev/null
  phase "containerd, image import"

  start kubelet2 nsenter --net="/run/netns/$ns2" "$bin/kubelet" --config "$state2/kubelet.yaml" \
    --kubeconfig "$state2/kubelet2-client.kubeconfig" --root-dir "$state2/kubelet" \
    --hostname-override "$node2" --node-ip "$ip_b" --v 1
  wait_for kubelet2 120 node_ready "$node2"
  phase "kubelet, node Ready"

  # A pod of the pause image on the second node, reached from the first
  # node's network namespace over the link.
  local pod_ip
  test_pod rttlab-join-check kubelet2 "$node2"
  overlaps "$pod_ip" "$pod_cidr2" || die "the test pod on $node2 got $pod_ip, outside $pod_cidr2"
  ping -c 2 -W 2 -q "$pod_ip" >/dev/null || die "the test pod on $node2 ($pod_ip) does not answer ping from this host over $link2"
  phase "test pod Running on $node2 (IP $pod_ip), answers ping"
  kubectl_ -n default delete pod rttlab-join-check --wait=true --timeout=60s >/dev/null
  phase "test pod deleted"

  echo
  print_phases join "$t_start"
  echo "node $node2 ($ip_b, network namespace $ns2), pods $pod_cidr2 on $bridge2, linked to $node over $link2 ($ip_a)"
  echo "images: import with .ci/kube.sh import IMAGE... (into both nodes)"
}

# node2_present says whether anything of a second node is there.
node2_present() {
  [ -d "$run2" ] || [ -d "$state2" ] || ip netns list | grep -qw "$ns2" || ip link show "$link2" >/dev/null 2>&1
}

# leave stops the second node and takes away everything join added; what
# the first node runs is not touched.
leave() {
  [ "$(id -u)" = 0 ] || die "leave stops what join started as root: run it as root"
  if ! node2_present; then
    log "no second node: nothing to stop"
    return 0
  fi
  local t0 pid name
  t0=$(now)
  phase_t=$t0
  name=$(cat "$run2/name" 2>/dev/null || true)
  if [ -n "$name" ] && alive kube-apiserver >/dev/null && alive kubelet2 >/dev/null; then
    kubectl_ delete pods --all-namespaces --field-selector "spec.nodeName=$name" --grace-period=1 --wait=true --timeout=60s >/dev/null 2>&1 ||
      log "not every pod on $name was deleted within 60 s; stopping their containers directly"
  fi
  pid=$(alive kubelet2) && stop_pid "$pid"
  alive containerd2 >/dev/null && kill_tasks "$run2/containerd.sock"
  pid=$(alive containerd2) && stop_pid "$pid"
  local pods
  kill_shims "$run2/containerd.sock" || true
  pods=$(cgroup_pids "$ns2")
  # shellcheck disable=SC2086
  [ -z "$pods" ] || { kill -KILL $pods 2>/dev/null || true; sleep 0.5; }
  phase "pods, kubelet, containerd"
  unmount_under "$state2" "$run2"
  if [ -n "$name" ] && alive kube-apiserver >/dev/null; then
    kubectl_ delete node "$name" --wait=true --timeout=30s >/dev/null 2>&1 || true
  fi
  ip netns del "$ns2" 2>/dev/null || true
  ip link del "$link2" 2>/dev/null || true
  ip route del "$pod_cidr2" 2>/dev/null || true
  while iptables -D FORWARD -i "$link2" -j ACCEPT 2>/dev/null; do :; done
  while iptables -D FORWARD -o "$link2" -j ACCEPT 2>/dev/null; do :; done
  local rule
  while read -r rule; do
    [ -n "$rule" ] && eval "iptables -t nat -D ${rule#-A }" 2>/dev/null || true
  done < <(iptables-save -t nat 2>/dev/null | grep -- "^-A .*--comment $link2")
  rm_cgroups "$ns2"
  rm -rf "$state2" "$run2"
  phase "link, routes, rules, cgroups, files"
  local left=""
  ip netns list | grep -qw "$ns2" && left="$left netns($ns2)"
  ip link show "$link2" >/dev/null 2>&1 && left="$left $link2"
  [ -z "$(mounts_under "$state2" "$run2")" ] || left="$left mounts"
  compgen -G "/sys/fs/cgroup/*/$ns2" >/dev/null && left="$left cgroups($ns2)"
  [ -z "$left" ] || die "leave left:$left"
  print_phases leave "$t0"
  log "the second node ${name:-} is gone"
}

# ---------------------------------------------------------------- down

# sweep_iptables CMD FAMILY deletes the KUBE-* and CNI-* chains that were
# not there before up (and every rule that jumps to them), and the rules
# that name the cluster's network in a comment.
sweep_iptables() {
  local cmd=$1 fam=$2 t chain rule
  command -v "$cmd" >/dev/null 2>&1 || return 0
  for t in filter nat mangle raw; do
    local dump before new=()
    dump=$("$cmd-save" -t "$t" 2>/dev/null) || continue
    # Without the record of the host before up, only the rules that
    # name the network go: other chains of these names may be another
    # cluster's.
    before=$run/host/chains$fam.$t
    if [ -f "$before" ]; then
      while read -r chain; do
        grep -qxF "$chain" "$before" || new+=("$chain")
      done < <(printf '%s\n' "$dump" | sed -n 's/^:\(KUBE-[^ ]*\|CNI-[^ ]*\) .*/\1/p')
    fi
    # Rules that jump to a new chain or carry the network's name.
    while read -r rule; do
      [ -n "$rule" ] || continue
      eval "$cmd -t $t -D ${rule#-A }" 2>/dev/null || true
    done < <(printf '%s\n' "$dump" | grep '^-A ' | while read -r r; do
      hit=0
      case $r in *"\"$network\""*|*"$bridge"*) hit=1 ;; esac
      for c in "${new[@]}"; do
        case " $r " in *" -j $c "*|*" -g $c "*) hit=1 ;; esac
      done
      [ $hit = 1 ] && echo "$r"
    done)
    for chain in "${new[@]}"; do "$cmd" -t "$t" -F "$chain" 2>/dev/null || true; done
    for chain in "${new[@]}"; do "$cmd" -t "$t" -X "$chain" 2>/dev/null || true; done
  done
}

# mounts_under DIR... lists the mount points under each DIR, deepest
# first.
mounts_under() {
  local d
  for d in "$@"; do
    awk -v d="$d" '$5 == d || index($5, d "/") == 1 {print $5}' /proc/self/mountinfo
  done | awk '{print length($0) " " $0}' | sort -rn | cut -d' ' -f2-
}

# unmount_under DIR... unmounts every mount point under each DIR,
# deepest first.
unmount_under() {
  local m
  while read -r m; do
    [ -n "$m" ] || continue
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || log "could not unmount $m"
  done < <(mounts_under "$@")
}

# kill_tasks SOCK kills and deletes every container task of the
# containerd at SOCK (those its kubelet did not stop).
kill_tasks() {
  local ids id
  ids=$(ctr --address "$1" -n k8s.io tasks ls -q 2>/dev/null || true)
  for id in $ids; do ctr --address "$1" -n k8s.io tasks kill -s SIGKILL "$id" >/dev/null 2>&1 || true; done
  [ -z "$ids" ] || sleep 1
  for id in $ids; do ctr --address "$1" -n k8s.io tasks delete -f "$id" >/dev/null 2>&1 || true; done
}

# kill_shims SOCK kills the shims of the containerd at SOCK, which
# outlive it (their command lines carry its socket), and with them their
# containers; it fails when there were none.
kill_shims() {
  local shims pid
  shims=$(pgrep -f -- "-address $1" || true)
  for pid in $shims; do kill -KILL "$pid" 2>/dev/null || true; done
  [ -n "$shims" ]
}

# kubepods_ours says whether the kubelet's cgroups are this cluster's:
# up did not find them, or (its record gone) no kubelet runs.
kubepods_ours() {
  local c=/sys/fs/cgroup/pids/kubepods
  [ -d /sys/fs/cgroup/pids ] || c=/sys/fs/cgroup/unified/kubepods
  [ -d "$c" ] || return 1
  if [ -f "$run/host/chains4.filter" ]; then
    ! grep -qxF "$c" "$run/host/cgroups" 2>/dev/null
  else
    ! pgrep -x kubelet >/dev/null
  fi
}

# pod_pids lists the processes in the kubelet's cgroups: the containers,
# which outlive a killed containerd and its shims.
pod_pids() {
  kubepods_ours || return 0
  cgroup_pids kubepods
}

# cgroup_pids ROOT lists the processes in the cgroups under ROOT (pids
# controller, or the unified hierarchy without it).
cgroup_pids() {
  local c=/sys/fs/cgroup/pids/$1
  [ -d /sys/fs/cgroup/pids ] || c=/sys/fs/cgroup/unified/$1
  find "$c" -name cgroup.procs -exec cat {} + 2>/dev/null | sort -un | tr '\n' ' '
}

# rm_cgroups ROOT removes the cgroups under ROOT in every hierarchy,
# deepest first.
rm_cgroups() {
  local c
  for c in /sys/fs/cgroup/*/"$1"; do
    [ -d "$c" ] || continue
    find "$c" -depth -type d -exec rmdir {} \; 2>/dev/null || log "could not remove the cgroup $c"
  done
}

# leftover_pids lists the processes that run the cluster's binaries or
# name its socket (containerd's shims), and its containers.
leftover_pids() {
  local p exe
  pod_pids
  for p in /proc/[0-9]*; do
    exe=$(readlink "$p/exe" 2>/dev/null) || continue
    case $exe in
    "$bin"/*) echo -n "${p#/proc/} " ;;
    *containerd*) tr '\0' ' ' <"$p/cmdline" 2>/dev/null | grep -qF -- "$sock" && echo -n "${p#/proc/} " ;;
    esac
  done
  return 0
}

down() {
  [ "$(id -u)" = 0 ] || die "down stops what up started as root: run it as root (sudo .ci/kube.sh down)"
  local t0 c pid
  if [ ! -d "$run" ] && [ ! -d "$state" ] && ! ip link show "$bridge" >/dev/null 2>&1 && [ -z "$(leftover_pids)" ]; then
    log "no cluster is up: nothing to stop"
    return 0
  fi
  if node2_present; then
    leave
    phase_labels=() phase_secs=()
  fi
  t0=$(now)
  phase_t=$t0
  node=$(cat "$run/node" 2>/dev/null || true)
  # The pods first, through the kubelet, so that their containers stop
  # and the CNI plugins take back their addresses and rules; the
  # controllers stop before, so that nothing makes new pods.
  if alive kube-apiserver >/dev/null && alive kubelet >/dev/null && [ -f "$state/admin.kubeconfig" ]; then
    for c in kube-controller-manager kube-scheduler; do
      pid=$(alive "$c") && stop_pid "$pid"
    done
    kubectl_ delete pods --all --all-namespaces --grace-period=1 --wait=true --timeout=60s >/dev/null 2>&1 ||
      log "not every pod was deleted within 60 s; stopping their containers directly"
    phase "pods deleted through the kubelet"
  fi
  pid=$(alive kubelet) && stop_pid "$pid"
  phase "kubelet stopped"
  # Containers the kubelet did not stop.
  alive containerd >/dev/null && kill_tasks "$sock"
  # The control plane at once, then etcd (the API server takes its
  # address out of the kubernetes service in etcd as it stops) and
  # containerd.
  local group pids
  for group in "coredns kube-scheduler kube-controller-manager kube-apiserver" "etcd containerd registry"; do
    pids=()
    for c in $group; do
      if pid=$(alive "$c"); then pids+=("$pid"); fi
    done
    stop_pid "${pids[@]}"
  done
  # containerd's shims outlive it; those of this containerd carry its
  # socket in their command line, and their containers die with them.
  kill_shims "$sock" && sleep 0.5
  local pods
  pods=$(pod_pids)
  if [ -n "$pods" ]; then
    log "killing containers that outlived their shims: pids $pods"
    # shellcheck disable=SC2086
    kill -KILL $pods 2>/dev/null || true
    sleep 0.5
  fi
  phase "containers, control plane, etcd, containerd"
  # Mounts: the pods' volumes, containers' root file systems, sandboxes'
  # shared memory and network namespaces.
  unmount_under "$state" "$run"
  ip link del "$bridge" 2>/dev/null || true
  sweep_iptables iptables 4
  sweep_iptables ip6tables 6
  if [ -f "$run/host/sysctl" ]; then
    local kv
    while read -r kv; do sysctl -q -w "$kv" >/dev/null 2>&1 || log "could not put back $kv"; done <"$run/host/sysctl"
  fi
  # The kubelet's cgroups (cgroupfs driver), deepest first.
  if kubepods_ours; then
    rm_cgroups kubepods
  fi
  if [ -d /var/log/containers ]; then
    find /var/log/containers -maxdepth 1 -type l -lname "$state/*" -delete 2>/dev/null || true
    [ -f "$run/host/var-log-containers" ] || [ ! -d "$run/host" ] || rmdir /var/log/containers 2>/dev/null || true
  fi
  # containerd keeps the CNI plugins' results in /var/lib/cni/results,
  # whatever the config.
  if [ -d /var/lib/cni/results ]; then
    local f id
    for f in /var/lib/cni/results/"$network"-*; do
      [ -e "$f" ] || continue
      id=${f#/var/lib/cni/results/"$network"-}
      rm -f "$f" /var/lib/cni/results/cni-loopback-"${id%-*}"-lo
    done
    if [ -d "$run/host" ] && [ ! -f "$run/host/var-lib-cni" ]; then
      rmdir /var/lib/cni/results /var/lib/cni 2>/dev/null || true
    fi
  fi
  # The shims' sockets are under /run/containerd whatever the config,
  # named by the SHA-256 of containerd's socket, the namespace and the
  # task (a killed shim leaves its own); a folder that up found missing
  # goes unless another containerd uses it.
  local task
  for task in "$run"/containerd/io.containerd.runtime.v2.task/k8s.io/*; do
    [ -d "$task" ] || continue
    rm -f "/run/containerd/s/$(printf '%s' "$sock/k8s.io/${task##*/}" | sha256sum | cut -d' ' -f1)"
  done
  if [ -d "$run/host" ] && [ ! -f "$run/host/run-containerd" ] && [ -d /run/containerd ] && [ ! -S /run/containerd/containerd.sock ]; then
    rm -rf /run/containerd
  fi
  # The kubelet's device plugin socket is in /var/lib/kubelet whatever
  # its root folder.
  rm -f /var/lib/kubelet/device-plugins/kubelet.sock
  if [ -d "$run/host" ] && [ ! -f "$run/host/var-lib-kubelet" ] && [ -d /var/lib/kubelet ]; then
    if [ -z "$(mounts_under /var/lib/kubelet)" ]; then
      rm -rf /var/lib/kubelet
    else
      log "/var/lib/kubelet has mounts (another kubelet's?); left as it is"
    fi
  fi
  rm -rf "$state" "$run"

  phase "mounts, bridge, iptables, sysctls, files"
  # What is left.
  local left=""
  local procs
  procs=$(leftover_pids)
  [ -z "$procs" ] || left="$left processes($procs)"
  [ -z "$(mounts_under "$state" "$run")" ] || left="$left mounts"
  ip link show "$bridge" >/dev/null 2>&1 && left="$left $bridge"
  [ -e "$state" ] && left="$left $state"
  kubepods_ours && left="$left cgroups(kubepods)"
  [ -z "$left" ] || die "down left:$left"
  print_phases down "$t0"
  log "nothing of the cluster is left"
}

# ---------------------------------------------------------------- status

status() {
  local c pid any=0
  for c in $components; do
    if pid=$(alive "$c"); then
      printf '%-24s running (pid %s)\n' "$c" "$pid"
      any=1
    else
      printf '%-24s not running\n' "$c"
    fi
  done
  if [ -d "$run2" ]; then
    for c in $components2; do
      if pid=$(alive "$c"); then
        printf '%-24s running (pid %s, node %s)\n' "$c" "$pid" "$(cat "$run2/name" 2>/dev/null)"
      else
        printf '%-24s not running\n' "$c"
      fi
    done
  fi
  [ $any = 1 ] && echo "KUBECONFIG=$state/admin.kubeconfig"
  return 0
}

# ---------------------------------------------------------------- import

# import_image IMAGE... streams the images from the Docker engine into
# the cluster's containerd (each node's) and prints the time it took: one
# archive for all of them, so the layers they share (the Debian base) are
# saved and imported once, and one wait for the nodes to list them. What
# is missing for it (an engine, an image, the cluster) exits 3 with one
# line, before anything is copied, so that a caller can skip what needs
# the images and say why.
import_image() {
  local image t0
  [ -S "$sock" ] || { printf 'rttlab kube: cannot import %s: the cluster is not up (no %s)\n' "$*" "$sock" >&2; exit 3; }
  command -v docker >/dev/null 2>&1 || { printf 'rttlab kube: cannot import %s: no docker command on this host\n' "$*" >&2; exit 3; }
  docker version --format '{{.Server.Version}}' >/dev/null 2>&1 || { printf 'rttlab kube: cannot import %s: no Docker engine answers\n' "$*" >&2; exit 3; }
  for image in "$@"; do
    docker image inspect "$image" >/dev/null 2>&1 || { printf 'rttlab kube: cannot import %s: the Docker engine does not have it (build it first)\n' "$image" >&2; exit 3; }
  done
  t0=$(now)
  local socks=$sock nodes
  nodes=$(cat "$run/node")
  if [ -S "$run2/containerd.sock" ]; then
    socks="$socks $run2/containerd.sock"
    nodes="$nodes $(cat "$run2/name")"
  fi
  local tar=$state/import.tar s n
  docker save -o "$tar" "$@" || die "docker save $* failed (see above)"
  for s in $socks; do
    ctr --address "$s" -n k8s.io images import "$tar" >/dev/null ||
      { rm -f "$tar"; die "importing $* into the containerd at $s failed (see above)"; }
  done
  rm -f "$tar"
  # Pods and rttlab read a node's images from its status, which the
  # kubelet refreshes on its own period (its image list every 30 s, the
  # status every 10 s): wait until each node lists every image.
  for n in $nodes; do
    for image in "$@"; do
      wait_for "" 120 node_lists_image "$n" "$image"
    done
  done
  log "imported $* from the Docker engine in $(secs "$t0" "$(now)") s (listed by $nodes)"
}

# node_lists_image NODE IMAGE says whether NODE's status lists IMAGE
# (containerd names it with its registry: docker.io/rttlab/agent:latest).
node_lists_image() {
  kubectl_ get node "$1" -o 'jsonpath={.status.images[*].names[*]}' 2>/dev/null | tr ' ' '\n' | grep -qF -- "$2"
}

# lock waits for another up or down on this host to finish first: each
# changes what the other reads.
lock() {
  mkdir -p "$cache"
  exec 8>"$cache/.cluster.lock"
  if ! flock -n 8; then
    log "another .ci/kube.sh up or down is running; waiting for it"
    flock -w 300 8 || die "another .ci/kube.sh up or down held $cache/.cluster.lock for 5 min: wait for it or stop it"
  fi
}

[ $# -ge 1 ] || usage
if [ "$1" = import ]; then
  [ $# -ge 2 ] || usage
  shift
  import_image "$@"
  exit 0
fi
[ $# -eq 1 ] || usage
case $1 in
build) build ;;
up) lock && up ;;
join) lock && join ;;
leave) lock && leave ;;
down) lock && down ;;
status) status ;;
-h | --help | help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' ;;
*)
  echo "rttlab kube: unknown command '$1': use build, up, join, leave, down, status or import" >&2
  exit 2
  ;;
esac
