//go:build ignore

// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Copyright The Herald Authors. */

/*
 * ARP responder for the IPs of LoadBalancer Services this node announces.
 *
 * Userspace (bpf/responder.go) fills l2_responder_v4 with one entry per
 * (VIP, interface) the node holds the lease for, and refreshes the heartbeat
 * in l2_responder_config while the agent is alive. For an ARP request that
 * asks for such a VIP on such an interface, and only while the heartbeat is
 * fresh, the packet is rewritten into the ARP reply and sent back out of the
 * interface it came in on. Every other packet passes untouched.
 *
 * The same logic (l2_respond) is built into two programs: an XDP program
 * (XDP_TX) and a tc program for tcx ingress (bpf_redirect to the egress of
 * the same device). The loader attaches one of them, per its mode.
 *
 * Build: bpf/gen.go (bpf2go, clang -target bpfel). The "go:build ignore"
 * line keeps the go tool from taking this file for cgo source.
 */

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/pkt_cls.h>
#include <linux/types.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#define ARPHRD_ETHER 1
#define ARPOP_REQUEST 1
#define ARPOP_REPLY 2

#define L2_RESPONDER_MAX_ENTRIES 65536

/* Key of l2_responder_v4. Layout matches Cilium's cilium_l2_responder_v4. */
struct l2_responder_key {
	__u32 ip4;     /* IPv4 address, network byte order */
	__u32 ifindex; /* ingress interface */
};

/* Value of l2_responder_v4. */
struct l2_responder_entry {
	__u64 responses_sent; /* ARP replies sent for this entry (atomic) */
	__u8 mac[6];          /* MAC to answer with (set by userspace) */
	__u8 pad[2];
};

/* The single entry of l2_responder_config. */
struct l2_responder_config {
	__u64 heartbeat_ns; /* CLOCK_MONOTONIC of the agent's last heartbeat, 0 = never */
	__u64 max_age_ns;   /* answer only while now - heartbeat_ns <= max_age_ns */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct l2_responder_key);
	__type(value, struct l2_responder_entry);
	__uint(max_entries, L2_RESPONDER_MAX_ENTRIES);
} l2_responder_v4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct l2_responder_config);
	__uint(max_entries, 1);
} l2_responder_config SEC(".maps");

/* ARP header plus the Ethernet/IPv4 payload (RFC 826), as on the wire. */
struct arp_eth_ipv4 {
	__be16 htype;
	__be16 ptype;
	__u8 hlen;
	__u8 plen;
	__be16 op;
	__u8 sha[ETH_ALEN];
	__be32 sip;
	__u8 tha[ETH_ALEN];
	__be32 tip;
} __attribute__((packed));

/* An Ethernet frame carrying an ARP packet for IPv4 over Ethernet. */
struct arp_frame {
	struct ethhdr eth;
	struct arp_eth_ipv4 arp;
} __attribute__((packed));

static __always_inline int heartbeat_fresh(void)
{
	__u32 zero = 0;
	struct l2_responder_config *cfg;
	__u64 now;

	cfg = bpf_map_lookup_elem(&l2_responder_config, &zero);
	if (!cfg || cfg->heartbeat_ns == 0)
		return 0;
	now = bpf_ktime_get_ns();
	/* A heartbeat in the future (cannot happen, same clock) wraps to a huge
	 * age and is treated as stale. */
	return now - cfg->heartbeat_ns <= cfg->max_age_ns;
}

/*
 * The logic shared by both programs. If f is an ARP request this node must
 * answer on ifindex, rewrites f in place into the ARP reply and returns the
 * map entry (whose counter the caller increments once the reply is on its
 * way); otherwise returns NULL with f untouched.
 */
static __always_inline struct l2_responder_entry *l2_respond(struct arp_frame *f, __u32 ifindex)
{
	struct l2_responder_key key = {};
	struct l2_responder_entry *entry;
	__u8 requester_mac[ETH_ALEN];
	__be32 requester_ip;

	if (f->eth.h_proto != bpf_htons(ETH_P_ARP))
		return NULL;
	if (f->arp.htype != bpf_htons(ARPHRD_ETHER) || f->arp.ptype != bpf_htons(ETH_P_IP) ||
	    f->arp.hlen != ETH_ALEN || f->arp.plen != 4 || f->arp.op != bpf_htons(ARPOP_REQUEST))
		return NULL;
	/* Gratuitous ARP: an announcement by someone else, not a question. */
	if (f->arp.sip == f->arp.tip)
		return NULL;

	key.ip4 = f->arp.tip;
	key.ifindex = ifindex;
	entry = bpf_map_lookup_elem(&l2_responder_v4, &key);
	if (!entry)
		return NULL;
	if (!heartbeat_fresh())
		return NULL;

	__builtin_memcpy(requester_mac, f->arp.sha, ETH_ALEN);
	requester_ip = f->arp.sip;

	__builtin_memcpy(f->eth.h_dest, requester_mac, ETH_ALEN);
	__builtin_memcpy(f->eth.h_source, entry->mac, ETH_ALEN);
	f->arp.op = bpf_htons(ARPOP_REPLY);
	__builtin_memcpy(f->arp.tha, requester_mac, ETH_ALEN);
	f->arp.tip = requester_ip;
	__builtin_memcpy(f->arp.sha, entry->mac, ETH_ALEN);
	f->arp.sip = key.ip4;
	return entry;
}

/* XDP: rewrite the frame in place and send it back with XDP_TX. */
SEC("xdp")
int l2_responder_xdp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct arp_frame *f = data;
	struct l2_responder_entry *entry;

	if ((void *)(f + 1) > data_end)
		return XDP_PASS;
	entry = l2_respond(f, ctx->ingress_ifindex);
	if (!entry)
		return XDP_PASS;
	__sync_fetch_and_add(&entry->responses_sent, 1);
	return XDP_TX;
}

/*
 * tc (tcx ingress): rewrite a copy of the frame on the stack, store it into
 * the packet and redirect it to the egress of the same device.
 *
 * The packet is only read directly, never written: a tc program that writes
 * packet data directly gets a verifier-added prologue that unclones every
 * cloned skb it sees (all of them while a packet socket, e.g. tcpdump, is
 * open on the device), not just the ARP requests it answers.
 */
SEC("tc")
int l2_responder_tc(struct __sk_buff *skb)
{
	struct l2_responder_entry *entry;
	struct arp_frame f;

	/* A hardware-untagged VLAN frame's tag is only in the skb metadata;
	 * such a request belongs to the VLAN device, not this one. */
	if (skb->vlan_present)
		return TC_ACT_OK;
	if (skb->protocol != bpf_htons(ETH_P_ARP))
		return TC_ACT_OK;
	/* Copies also from non-linear skbs. */
	if (bpf_skb_load_bytes(skb, 0, &f, sizeof(f)) < 0)
		return TC_ACT_OK;

	entry = l2_respond(&f, skb->ifindex);
	if (!entry)
		return TC_ACT_OK;
	if (bpf_skb_store_bytes(skb, 0, &f, sizeof(f), 0) < 0)
		return TC_ACT_OK; /* nothing written: the request passes */
	__sync_fetch_and_add(&entry->responses_sent, 1);
	return bpf_redirect(skb->ifindex, 0);
}

char __license[] SEC("license") = "Dual BSD/GPL";
