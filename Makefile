# rttlab — see README.md.
#
#   make run    set up the host, build images, run the smoke study, report
#   make test   set up the host, run all tests (unit and integration)
#   make cluster       build Kubernetes from the module proxy (once) and start
#                      a one-node cluster on this host (.ci/kube.sh); the last
#                      line is KUBECONFIG=<path>
#   make cluster-join  add a second node to that cluster (its own containerd
#                      and kubelet in a network namespace of their own)
#   make cluster-leave take the second node away again
#   make cluster-down  stop that cluster (and a second node) and remove all
#                      it made

# When make started: make run times its phases from here (.ci/phases.sh).
T0 := $(shell date +%s.%N)

# A go of at least go.mod's version: the one on PATH or /usr/local/go, else
# that exact release fetched from the module proxy into rttlab's cache
# (.ci/go.sh). Its folder goes first on PATH for the tests, which run go too.
ifeq ($(origin GO),undefined)
GO := $(shell .ci/go.sh)
ifeq ($(GO),)
$(error no Go toolchain: see the lines above)
endif
endif
export PATH := $(dir $(GO)):$(PATH)

BIN      := bin/rttlab
VERSION  := $(shell git describe --always --dirty 2>/dev/null || echo dev)
COMMIT   := $(shell git rev-parse --short HEAD 2>/dev/null)
LDFLAGS  := -X main.version=$(VERSION) -X main.commit=$(COMMIT)
ENGINE   := .ci/engine.sh
# rttlab's binary: make build, and make run beside its set-up.
BUILD    := $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/rttlab

.PHONY: build run test unit vet cross clean cluster cluster-join cluster-leave cluster-down

build:
	$(BUILD)

vet:
	$(GO) vet ./...

# linux/arm64 (a DGX's Grace, an arm64 CI runner): the binary, which is
# also the agent inside the containers, cross-built and vetted.
cross:
	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN)-linux-arm64 ./cmd/rttlab
	GOOS=linux GOARCH=arm64 $(GO) vet ./...

# Unit tests only (no engine needed).
unit:
	$(ENGINE) $(GO) test -race -count=1 -short ./...

# All tests: the host set-up's decisions on hosts unlike this one (with
# stand-ins for docker, apt-get and dpkg-query), the unit tests under the
# race detector, then everything, integration included, against a real
# engine, real PostgreSQL and real shaping (set-up of packages and dockerd
# first), and the kernel netem backend in qemu VMs that boot Debian's
# stock kernel for amd64 and arm64 (.ci/vm.sh installs qemu and caches the
# kernel packages), verbose so that the log shows the VMs' kernels and
# what netem read back. The integration stage includes the arm64
# rehearsal, whose database and app run under qemu-user where the host is
# not arm64 (.ci/binfmt.sh installs and registers it). Last, a real
# Kubernetes cluster (.ci/kubetest.sh: its binaries built from the module
# proxy once per version, up, a second node joined, the tests of one node,
# of two and of the registry, down), its phases timed apart.
test: build vet cross
	bash .ci/engine_test.sh
	$(ENGINE) $(GO) test -race -count=1 -short ./...
	RTTLAB_INTEGRATION=1 $(ENGINE) .ci/binfmt.sh .ci/vm.sh sh -c '$(GO) test -count=1 -timeout 80m -p 1 $$($(GO) list ./... | grep -v /netem/vmtest) && $(GO) test -count=1 -timeout 10m -v ./netem/vmtest'
	GO=$(GO) RTTLAB_KUBE_AGENT=required $(ENGINE) bash .ci/kubetest.sh

# The first run: rttlab's binary built while the host set-up installs
# what make run needs (not the tests' packages), then the base image,
# every image (longest first) and the smoke study; the time of each phase
# is printed at the end.
run:
	RTTLAB_T0=$(T0) RTTLAB_T1=$$(date +%s.%N) RTTLAB_SETUP=run \
	  RTTLAB_BESIDE='$(BUILD)' \
	  $(ENGINE) .ci/phases.sh \
	  "base image" "$(BIN) images base" \
	  "images" "$(BIN) images build" \
	  "smoke study" "$(BIN) run --plan smoke"

# A one-node Kubernetes cluster beside any Docker engine: its binaries
# built once per version into ~/.cache/rttlab/kube, its containerd,
# etcd, control plane and kubelet started as root; cluster-down leaves
# the host as cluster found it.
cluster:
	GO=$(GO) bash .ci/kube.sh build
	GO=$(GO) bash .ci/kube.sh up

cluster-join:
	bash .ci/kube.sh join

cluster-leave:
	bash .ci/kube.sh leave

cluster-down:
	bash .ci/kube.sh down

clean:
	rm -rf bin
