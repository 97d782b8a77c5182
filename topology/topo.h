/*
 * topo.h — the lab topology: what a topology file declares, after validation.
 *
 * A topology file (YAML, see 1-2-4.yaml) declares nodes (controller, switches,
 * hosts with ranks), a management subnet, and point-to-point links between
 * switches and hosts, each end with its address.  topo_load() parses it with
 * libyaml and checks it completely; on success the result is a tree rooted at
 * the declared root switch, with every derived fact the lab generator and the
 * controller need: interface names, segments (a switch bridges the links on
 * which it uses the same address), parents, and static routes.
 */
#ifndef INCLAB_TOPO_H
#define INCLAB_TOPO_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define TOPO_MAX_NODES 256
#define TOPO_MAX_LINKS 256
#define TOPO_MAX_SEGMENTS TOPO_MAX_LINKS
#define TOPO_NAME_MAX 12 /* "to-" + name must fit IFNAMSIZ-1 = 15 characters */
#define TOPO_MAX_PORTS 64 /* data ports of one node */
#define TOPO_TOPONAME_MAX 32 /* a topology's name (struct topology.name) */
#define TOPO_MAX_HYPERVISORS 16 /* "hypervisors:" entries; device names carry the index in 2 digits */
#define TOPO_URI_MAX 200 /* a hypervisor's libvirt URI, characters */
#define TOPO_IMAGES_MAX 120 /* a hypervisor's images directory, characters */
/* where a hypervisor other than the first keeps the lab's storage pool when the file names none */
#define TOPO_IMAGES_DEFAULT "/var/lib/inclab-images"

enum topo_role { TOPO_CONTROLLER, TOPO_SWITCH, TOPO_HOST };

/** An IPv4 address with prefix length; addr in host byte order. */
struct topo_cidr {
	uint32_t addr;
	int prefix;
};

/** One end of a link: a data port of a node (a virtio NIC in the lab). */
struct topo_port {
	int link;             /* index into topology.links */
	int peer;             /* node at the other end */
	struct topo_cidr addr;
	char ifname[16];      /* "to-<peer>" */
	int segment;          /* index into topology.segments */
};

/**
 * A layer-3 interface of a node on one segment: either a single port, or on a
 * switch a bridge "brN" over all ports on which it uses the same address.
 */
struct topo_l3if {
	char ifname[16];
	struct topo_cidr addr;
	int segment;
	int bridge;           /* 1 when ifname is a bridge over several ports */
};

struct topo_route {
	struct topo_cidr dest; /* network address and prefix */
	uint32_t via;
	int l3if;              /* index into node.l3ifs of the outgoing interface */
};

struct topo_node {
	char name[TOPO_NAME_MAX + 1];
	enum topo_role role;
	int rank;             /* hosts: 0..nhosts-1; others: -1 */
	uint32_t mgmt;        /* management address (prefix: topology.mgmt) */
	int vcpus, memory_mib;
	int line;             /* line of the declaration in the file, 1-based */
	int hypervisor;       /* index into topology.hypervisors; -1 when the file declares none */
	int placed;           /* 1: its "hypervisor:" placed it; 0: the automatic balance did */
	int parent;           /* tree parent (node index); -1 for the root and the controller */
	int nports;
	struct topo_port ports[TOPO_MAX_PORTS];
	int nl3ifs;
	struct topo_l3if l3ifs[TOPO_MAX_PORTS];
	int nroutes;
	struct topo_route routes[TOPO_MAX_SEGMENTS];
};

struct topo_link {
	int node[2];
	struct topo_cidr addr[2];
	int line;
};

/** An IP subnet shared by the ends of one or more links (one L2 domain). */
struct topo_segment {
	struct topo_cidr net; /* network address and prefix */
	int line;             /* first link that made it */
};

/**
 * A machine that runs nodes of the lab, reached through a libvirt connection
 * (topo_uri_ok() grammar) and, for the tree edges and the management network
 * that cross machines, through tunnels to @addr (IPv4, host order).
 */
struct topo_hypervisor {
	char name[TOPO_NAME_MAX + 1];
	char uri[TOPO_URI_MAX + 1];
	uint32_t addr;
	char images[TOPO_IMAGES_MAX + 1]; /* its storage pool's directory (topo_dir_ok()); unused on the first */
	int line;             /* line of its declaration */
	int nnodes;           /* nodes placed on it */
	int memory_mib;       /* their memory, MiB */
};

struct topology {
	char file[256];       /* path it was read from, for messages */
	char name[64];
	int root;             /* node index of the root switch */
	struct topo_cidr mgmt;/* management subnet */
	int nnodes, nlinks, nsegments, nhosts;
	struct topo_node nodes[TOPO_MAX_NODES];
	struct topo_link links[TOPO_MAX_LINKS];
	struct topo_segment segments[TOPO_MAX_SEGMENTS];
	int nhypervisors;     /* 0: no "hypervisors:" section, one machine as always */
	struct topo_hypervisor hypervisors[TOPO_MAX_HYPERVISORS];
	char *source;         /* the file's text, as read */
};

/**
 * topo_load() - read and validate a topology file.
 * @path: file to read.
 * @err:  where to print errors, each as "FILE:LINE: message".
 *
 * Return: a topology to free with topo_free(), or NULL after printing every
 * error found (bad YAML, unknown keys, duplicate names, overlapping subnets,
 * dangling links, hosts without a switch, a graph that is not a tree, ...).
 */
struct topology *topo_load(const char *path, FILE *err);

/**
 * topo_parse() - topo_load() of the @len bytes at @text (a copy is kept as
 * the topology's source); @name stands for the file in messages.
 */
struct topology *topo_parse(const char *text, size_t len, const char *name, FILE *err);

/** topo_free() - release a topology from topo_load(); NULL is allowed. */
void topo_free(struct topology *t);

/** topo_find() - index of the node called @name, or -1. */
int topo_find(const struct topology *t, const char *name);

/** topo_role_name() - "controller", "switch" or "host". */
const char *topo_role_name(enum topo_role r);

/**
 * topo_word_ok() - whether @s is 1..@max characters of a-z and 0-9 in groups
 * joined by single '-', the first a letter when @letter_first: the grammar
 * of node and topology names (and of a lab's prefix, topogen), which are
 * written unquoted into XML, cloud-config and shell files.
 */
int topo_word_ok(const char *s, size_t max, int letter_first);

/**
 * topo_uri_ok() - whether @s is a libvirt URI of the QEMU driver that the
 * lab accepts: qemu[+ssh|+libssh|+libssh2|+tls|+tcp|+unix]://[user@][host][:port]/system
 * or /session, then an optional ?query; at most TOPO_URI_MAX characters of
 * A-Z a-z 0-9 and - . _ ~ : / @ ? & = % + , (no quote, blank, '<', '$' or
 * '\'); a remote transport names a host, a local one none. 1 when it is; 0
 * with the reason in @why (@len bytes) when not.
 */
int topo_uri_ok(const char *s, char *why, size_t len);

/**
 * topo_dir_ok() - whether @s is a directory path the lab takes for a
 * hypervisor's images (libvirt storage pool): absolute, 2..TOPO_IMAGES_MAX
 * characters of A-Z a-z 0-9 . _ / + -, no "--", no empty, "." or ".."
 * component, no trailing '/', not "/".
 * @why, @len: on refusal, why (a phrase).
 *
 * Return: 1 when it is, 0 when not.
 */
int topo_dir_ok(const char *s, char *why, size_t len);

/** topo_ntoa() - dotted quad of a host-order address into @buf (16 bytes). */
const char *topo_ntoa(uint32_t addr, char buf[16]);

/** topo_mask() - netmask of a prefix length, host order. */
uint32_t topo_mask(int prefix);

#endif
