/*
Copyright The Herald Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Package bpf holds Herald's eBPF datapath: an ARP responder (l2_responder.c)
// that answers for the LoadBalancer IPs this node announces, and the Go API to
// load it, attach it to interfaces and fill its maps (Responder).
//
// l2responder_bpfel.go and l2responder_bpfel.o are generated from
// l2_responder.c by `go generate ./bpf/...` (run by hack/generate.sh) and are
// checked in, so building Herald needs no C toolchain. Regenerating needs
// clang, llvm and libbpf-dev (install/dev/ensure-tools.sh installs them).
//
// bpf2go runs clang directly, not through a shell, so the multiarch include
// directory cannot be computed with $(gcc -print-multiarch): it is fixed to
// /usr/include/x86_64-linux-gnu, where Debian keeps asm/types.h on amd64.
// On another build architecture add the matching directory through clang's
// environment, e.g. CPATH=/usr/include/aarch64-linux-gnu go generate ./bpf/...
// The object itself does not depend on the build architecture (-target bpfel).
package bpf

//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -target bpfel -cflags "-O2 -g -Wall -I/usr/include/x86_64-linux-gnu" l2responder l2_responder.c
