//go:build ignore

// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Copyright The Herald Authors. */

/*
 * ARP and NDP responder for the IPs of LoadBalancer Services this node
 * announces.
 *
 * Userspace (bpf/responder.go) fills l2_responder_v4 and l2_responder_v6
 * with one entry per (VIP, interface) the node holds the lease for, and
 * refreshes the heartbeat in l2_responder_config while the agent is alive.
 * For an ARP request, or an IPv6 Neighbor Solicitation (RFC 4861), that asks
 * for such a VIP on such an interface, and only while the heartbeat is
 * fresh, the packet is turned into the ARP reply or Neighbor Advertisement
 * and sent back out of the interface it came in on. Every other packet
 * passes untouched.
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

/* tcx: "run the next program" (the UAPI headers of older distributions lack
 * it). What the responder does not answer goes on to the programs attached
 * after it, and past the last to the stack: two responders (the agent's and
 * the control-plane VIP's) or another tcx user on one device each see every
 * request. TC_ACT_OK would be TCX_PASS, which ends the chain. */
#ifndef TCX_NEXT
#define TCX_NEXT -1
#endif

#define ARPHRD_ETHER 1
#define ARPOP_REQUEST 1
#define ARPOP_REPLY 2

#define L2_RESPONDER_MAX_ENTRIES 65536

#define IPPROTO_ICMPV6 58
#define ND_NEIGHBOR_SOLICIT 135
#define ND_NEIGHBOR_ADVERT 136
#define ND_OPT_TARGET_LINKADDR 2
#define ND_HOP_LIMIT 255 /* RFC 4861 7.1.1: anything else came through a router */
#define NA_FLAG_SOLICITED 0x40000000
#define NA_FLAG_OVERRIDE 0x20000000

/* Key of l2_responder_v4. Layout matches Cilium's cilium_l2_responder_v4. */
struct l2_responder_key {
	__u32 ip4;     /* IPv4 address, network byte order */
	__u32 ifindex; /* ingress interface */
};

/* Key of l2_responder_v6. Layout matches Cilium's cilium_l2_responder_v6. */
struct l2_responder_key6 {
	__u8 ip6[16];  /* IPv6 address, network byte order */
	__u32 ifindex; /* ingress interface */
	__u32 pad;
};

/* Value of l2_responder_v4 and l2_responder_v6. */
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
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct l2_responder_key6);
	__type(value, struct l2_responder_entry);
	__uint(max_entries, L2_RESPONDER_MAX_ENTRIES);
} l2_responder_v6 SEC(".maps");

/* Value of l2_responder_conflicts: another host spoke for one of the IPs
 * this node answers for (an ARP packet with it as sender address, a
 * Neighbor Advertisement for it, from another MAC). Userspace reports and
 * removes the entries; the program never answers back (no GARP war). */
struct l2_conflict {
	__u64 seen;    /* packets seen (atomic) */
	__u64 last_ns; /* CLOCK_MONOTONIC of the last one */
	__u8 mac[6];   /* the other host's MAC, as last seen */
	__u8 pad[2];
};

/* Keyed like l2_responder_v6, IPv4 addresses as ::ffff:a.b.c.d. LRU: a
 * flood of forged packets cannot fill it for good. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, struct l2_responder_key6);
	__type(value, struct l2_conflict);
	__uint(max_entries, 4096);
} l2_responder_conflicts SEC(".maps");

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

/* IPv6 header (RFC 8200), as on the wire. */
struct ip6 {
	__be32 vtc_flow; /* version 4 bits, traffic class 8, flow label 20 */
	__be16 payload_len;
	__u8 nexthdr;
	__u8 hop_limit;
	__u8 saddr[16];
	__u8 daddr[16];
} __attribute__((packed));

/*
 * A Neighbor Solicitation (RFC 4861 4.3) as far as the responder reads it:
 * Ethernet, an IPv6 header without extension headers (none is allowed
 * before ICMPv6 in ND), the ICMPv6 message up to the target address. The
 * options that may follow (source link-layer address, nonce) are not
 * needed: the answer goes to the Ethernet source.
 */
struct ns_frame {
	struct ethhdr eth;
	struct ip6 ip;
	__u8 type;
	__u8 code;
	__be16 csum;
	__be32 reserved;
	__u8 target[16];
} __attribute__((packed));

/* The Neighbor Advertisement (RFC 4861 4.4) the responder sends: with the
 * Target Link-Layer Address option, the MAC it answers with. */
struct na_frame {
	struct ethhdr eth;
	struct ip6 ip;
	__u8 type;
	__u8 code;
	__be16 csum;
	__be32 flags; /* R, S, O and 29 reserved bits */
	__u8 target[16];
	__u8 opt_type;
	__u8 opt_len; /* in units of 8 bytes */
	__u8 opt_mac[ETH_ALEN];
} __attribute__((packed));

#define NA_ICMP_LEN (sizeof(struct na_frame) - sizeof(struct ethhdr) - sizeof(struct ip6))

/* note_conflict records that mac spoke for ip (16 bytes) on ifindex, an IP
 * this node answers for with entry, unless mac is the entry's own. */
static __always_inline void note_conflict(const __u8 *ip, __u32 ifindex, const __u8 *mac,
					  const struct l2_responder_entry *entry)
{
	struct l2_responder_key6 key = {};
	struct l2_conflict *c, fresh = {};
	__u8 diff = 0;
	int i;

#pragma unroll
	for (i = 0; i < ETH_ALEN; i++)
		diff |= mac[i] ^ entry->mac[i];
	if (!diff)
		return;
	__builtin_memcpy(key.ip6, ip, 16);
	key.ifindex = ifindex;
	c = bpf_map_lookup_elem(&l2_responder_conflicts, &key);
	if (c) {
		__sync_fetch_and_add(&c->seen, 1);
		c->last_ns = bpf_ktime_get_ns();
		__builtin_memcpy(c->mac, mac, ETH_ALEN);
		return;
	}
	fresh.seen = 1;
	fresh.last_ns = bpf_ktime_get_ns();
	__builtin_memcpy(fresh.mac, mac, ETH_ALEN);
	bpf_map_update_elem(&l2_responder_conflicts, &key, &fresh, BPF_NOEXIST);
}

/* note_arp_sender notes a conflict when the sender of an ARP packet claims
 * an IPv4 address this node answers for. */
static __always_inline void note_arp_sender(const struct arp_frame *f, __u32 ifindex)
{
	struct l2_responder_key key = {};
	struct l2_responder_entry *entry;
	__u8 mapped[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	key.ip4 = f->arp.sip;
	key.ifindex = ifindex;
	entry = bpf_map_lookup_elem(&l2_responder_v4, &key);
	if (!entry)
		return;
	__builtin_memcpy(&mapped[12], &f->arp.sip, 4);
	note_conflict(mapped, ifindex, f->arp.sha, entry);
}

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
	    f->arp.hlen != ETH_ALEN || f->arp.plen != 4)
		return NULL;
	/* Another host using one of our IPs as its own shows in any of its ARP
	 * packets: replies, gratuitous announcements, its own requests. */
	note_arp_sender(f, ifindex);
	if (f->arp.op != bpf_htons(ARPOP_REQUEST))
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

static __always_inline int ip6_is_unspecified(const __u8 *a)
{
	__u8 any = 0;
	int i;

#pragma unroll
	for (i = 0; i < 16; i++)
		any |= a[i];
	return any == 0;
}

static __always_inline int ip6_equal(const __u8 *a, const __u8 *b)
{
	__u8 diff = 0;
	int i;

#pragma unroll
	for (i = 0; i < 16; i++)
		diff |= a[i] ^ b[i];
	return diff == 0;
}

/* solicited_node reports whether a is the solicited-node multicast address
 * of target: ff02::1:ff00:0/104 plus target's last 24 bits. */
static __always_inline int solicited_node(const __u8 *a, const __u8 *target)
{
	static const __u8 prefix[13] = {0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0xff};
	int i;

#pragma unroll
	for (i = 0; i < 13; i++)
		if (a[i] != prefix[i])
			return 0;
	return a[13] == target[13] && a[14] == target[14] && a[15] == target[15];
}

/* icmp6_csum computes the ICMPv6 checksum of na (its csum field zero):
 * the pseudo-header of RFC 8200 8.1, then the message. Summing 16-bit words
 * as they lie in memory gives the sum in network byte order on any host. */
static __always_inline __u16 icmp6_csum(const struct na_frame *na)
{
	const __u16 *p = (const __u16 *)na->ip.saddr; /* saddr, daddr: 16 words */
	__u32 sum = 0;
	int i;

#pragma unroll
	for (i = 0; i < 16; i++)
		sum += p[i];
	sum += bpf_htons(NA_ICMP_LEN); /* upper-layer packet length (32 bits) */
	sum += bpf_htons(IPPROTO_ICMPV6);
	p = (const __u16 *)&na->type;
#pragma unroll
	for (i = 0; i < NA_ICMP_LEN / 2; i++)
		sum += p[i];
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return ~sum;
}

/*
 * The IPv6 counterpart of l2_respond. If ns is a Neighbor Solicitation this
 * node must answer on ifindex, fills na with the Neighbor Advertisement and
 * returns the map entry; otherwise returns NULL.
 *
 * Validation follows RFC 4861 7.1.1 as far as a responder can: hop limit
 * 255, ICMPv6 code 0, a message of at least 24 bytes, a unicast target, and
 * a destination that is the target itself or its solicited-node multicast
 * address. The checksum is left to the kernel: a corrupt solicitation at
 * worst gets a correct answer.
 *
 * A solicitation from the unspecified address is duplicate address
 * detection by a host that wants the VIP: the answer, to all nodes with S
 * clear (7.2.4), tells it the address is taken.
 */
static __always_inline struct l2_responder_entry *l2_respond_v6(const struct ns_frame *ns, __u32 ifindex,
								 struct na_frame *na)
{
	static const __u8 all_nodes[16] = {0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01};
	static const __u8 all_nodes_mac[ETH_ALEN] = {0x33, 0x33, 0, 0, 0, 0x01};
	struct l2_responder_key6 key = {};
	struct l2_responder_entry *entry;
	int dad;

	if (ns->eth.h_proto != bpf_htons(ETH_P_IPV6))
		return NULL;
	if ((bpf_ntohl(ns->ip.vtc_flow) >> 28) != 6 || ns->ip.nexthdr != IPPROTO_ICMPV6 ||
	    ns->ip.hop_limit != ND_HOP_LIMIT || bpf_ntohs(ns->ip.payload_len) < 24)
		return NULL;
	if (ns->type == ND_NEIGHBOR_ADVERT && ns->code == 0) {
		/* Another host advertising one of our IPv6 addresses. */
		__builtin_memcpy(key.ip6, ns->target, 16);
		key.ifindex = ifindex;
		entry = bpf_map_lookup_elem(&l2_responder_v6, &key);
		if (entry)
			note_conflict(ns->target, ifindex, ns->eth.h_source, entry);
		return NULL;
	}
	if (ns->type != ND_NEIGHBOR_SOLICIT || ns->code != 0)
		return NULL;
	if (ns->target[0] == 0xff)
		return NULL; /* multicast target: invalid */
	dad = ip6_is_unspecified(ns->ip.saddr);
	if (!solicited_node(ns->ip.daddr, ns->target) &&
	    (dad || !ip6_equal(ns->ip.daddr, ns->target)))
		return NULL;

	__builtin_memcpy(key.ip6, ns->target, 16);
	key.ifindex = ifindex;
	entry = bpf_map_lookup_elem(&l2_responder_v6, &key);
	if (!entry)
		return NULL;
	if (!heartbeat_fresh())
		return NULL;

	__builtin_memset(na, 0, sizeof(*na));
	if (dad) {
		__builtin_memcpy(na->eth.h_dest, all_nodes_mac, ETH_ALEN);
		__builtin_memcpy(na->ip.daddr, all_nodes, 16);
		na->flags = bpf_htonl(NA_FLAG_OVERRIDE);
	} else {
		__builtin_memcpy(na->eth.h_dest, ns->eth.h_source, ETH_ALEN);
		__builtin_memcpy(na->ip.daddr, ns->ip.saddr, 16);
		na->flags = bpf_htonl(NA_FLAG_SOLICITED | NA_FLAG_OVERRIDE);
	}
	__builtin_memcpy(na->eth.h_source, entry->mac, ETH_ALEN);
	na->eth.h_proto = bpf_htons(ETH_P_IPV6);
	na->ip.vtc_flow = bpf_htonl(6 << 28);
	na->ip.payload_len = bpf_htons(NA_ICMP_LEN);
	na->ip.nexthdr = IPPROTO_ICMPV6;
	na->ip.hop_limit = ND_HOP_LIMIT;
	__builtin_memcpy(na->ip.saddr, ns->target, 16);
	na->type = ND_NEIGHBOR_ADVERT;
	__builtin_memcpy(na->target, ns->target, 16);
	na->opt_type = ND_OPT_TARGET_LINKADDR;
	na->opt_len = 1;
	__builtin_memcpy(na->opt_mac, entry->mac, ETH_ALEN);
	na->csum = icmp6_csum(na);
	return entry;
}

/* XDP, IPv6: the advertisement is built on the stack, then the frame is
 * resized to it and overwritten. */
static __always_inline int l2_responder_xdp_v6(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ns_frame *ns = data;
	struct l2_responder_entry *entry;
	struct na_frame na;

	if ((void *)(ns + 1) > data_end)
		return XDP_PASS;
	entry = l2_respond_v6(ns, ctx->ingress_ifindex, &na);
	if (!entry)
		return XDP_PASS;
	if (bpf_xdp_adjust_tail(ctx, (int)sizeof(na) - (int)(data_end - data)) < 0)
		return XDP_PASS;
	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	if (data + sizeof(na) > data_end)
		return XDP_DROP; /* cannot happen: the frame was just resized */
	__builtin_memcpy(data, &na, sizeof(na));
	__sync_fetch_and_add(&entry->responses_sent, 1);
	return XDP_TX;
}

/* XDP: rewrite the frame in place and send it back with XDP_TX. */
SEC("xdp")
int l2_responder_xdp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct arp_frame *f = data;
	struct l2_responder_entry *entry;

	if ((void *)(&f->eth + 1) > data_end)
		return XDP_PASS;
	if (f->eth.h_proto == bpf_htons(ETH_P_IPV6))
		return l2_responder_xdp_v6(ctx);
	if ((void *)(f + 1) > data_end)
		return XDP_PASS;
	entry = l2_respond(f, ctx->ingress_ifindex);
	if (!entry)
		return XDP_PASS;
	__sync_fetch_and_add(&entry->responses_sent, 1);
	return XDP_TX;
}

/* tc, IPv6: the advertisement is built on the stack, then the packet is
 * resized to it and overwritten. */
static __always_inline int l2_responder_tc_v6(struct __sk_buff *skb)
{
	struct l2_responder_entry *entry;
	struct ns_frame ns;
	struct na_frame na;

	if (bpf_skb_load_bytes(skb, 0, &ns, sizeof(ns)) < 0)
		return TCX_NEXT;
	entry = l2_respond_v6(&ns, skb->ifindex, &na);
	if (!entry)
		return TCX_NEXT;
	if (bpf_skb_change_tail(skb, sizeof(na), 0) < 0)
		return TCX_NEXT;
	if (bpf_skb_store_bytes(skb, 0, &na, sizeof(na), 0) < 0)
		return TC_ACT_SHOT; /* resized but not rewritten: do not pass it on */
	__sync_fetch_and_add(&entry->responses_sent, 1);
	return bpf_redirect(skb->ifindex, 0);
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
		return TCX_NEXT;
	if (skb->protocol == bpf_htons(ETH_P_IPV6))
		return l2_responder_tc_v6(skb);
	if (skb->protocol != bpf_htons(ETH_P_ARP))
		return TCX_NEXT;
	/* Copies also from non-linear skbs. */
	if (bpf_skb_load_bytes(skb, 0, &f, sizeof(f)) < 0)
		return TCX_NEXT;

	entry = l2_respond(&f, skb->ifindex);
	if (!entry)
		return TCX_NEXT;
	if (bpf_skb_store_bytes(skb, 0, &f, sizeof(f), 0) < 0)
		return TCX_NEXT; /* nothing written: the request passes */
	__sync_fetch_and_add(&entry->responses_sent, 1);
	return bpf_redirect(skb->ifindex, 0);
}

char __license[] SEC("license") = "Dual BSD/GPL";
