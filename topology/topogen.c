/*
 * topogen — turn a topology file into everything the lab needs to boot it:
 *
 *   OUT/network-mgmt.xml          libvirt isolated network (bridge, no host IP)
 *   OUT/domains/NODE.xml          libvirt domain per node (direct kernel boot;
 *                                 tree edges are <interface type='udp'> tunnels
 *                                 on 127.0.0.1, one loopback port per link end)
 *   OUT/seeds/NODE/{meta-data,user-data,network-config}
 *                                 cloud-init NoCloud seed: hostname, addresses,
 *                                 bridges, routes, /etc/inclab/node.conf
 *   OUT/inventory.tsv             one line per node, for the lab scripts
 *   OUT/links.tsv                 one line per link (interfaces, UDP ports)
 *   OUT/lab.json                  the lab's static facts as JSON (gen_json(): nodes,
 *                                 roles, kinds, addresses, interfaces, links), which
 *                                 `lab.sh status --format json` completes with live state
 *   OUT/topology.dot              the topology as a graphviz graph (gen_dot())
 *
 * --json and --dot print only lab.json's or topology.dot's text on standard
 * output (no -o): for a lab that is not running (`make lab-graph`).
 *
 * With --switches netns (SWITCHES=netns) only hosts are VMs: every switch and
 * the controller is a network namespace of the lab machine, and instead of a
 * domain and a seed each gets
 *   OUT/nodes/NODE/node.conf      the same file as its VM's seed writes
 *   OUT/nodes/NODE/net.sh         its network-config as ip(8) commands, run
 *                                 inside the namespace (same addresses, bridges,
 *                                 routes and MTUs)
 *   OUT/nodes/controller/topology.yaml
 *   OUT/wires.tsv                 what lab.sh creates to join them: a veth per
 *                                 namespace<->namespace link, a bridge + veth
 *                                 per host<->namespace link (the host VM's tap,
 *                                 named here, joins the bridge), a veth from
 *                                 each namespace into the management bridge
 *
 * With --keys DIR every node gets its own key (proto/ctlauth.h): DIR/NODE.key
 * is made when missing (libsodium, mode 0600) and written, mode 0600, into
 * that node's seed or nodes/NODE/node.key only; the controller's seed or
 * nodes/controller/node-keys gets the table of every node's key. Files that
 * hold a key are created mode 0600.
 *
 * Output depends only on the topology and the options (and the keys), so
 * golden files (tests/golden/) pin it down. Usage: topogen --help.
 */
#include "topo.h"
#include "../proto/ctlauth.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* MTU of switch<->switch links inside the guests: the switches bundle the
 * frames of a round for the same peer into one (switch/bundle.h), and under
 * TCG the lab pays per frame. 9000 carries 8 of the 1082-byte frames of the
 * 1024-byte RoCE MTU. Host links keep 1500 (rxe's RoCE MTU 1024, as
 * LAB-NOTES measured fastest). */
#define SWITCH_LINK_MTU 9000

/* TCG's translation cache per VM, MiB (gen_domain()): QEMU's default is 1 GiB. */
#define TCG_TB_CACHE_MIB 256

struct opts {
	const char *out;
	const char *prefix;
	const char *state_dir;
	const char *image[3];
	const char *accel;
	int udp_base;
	int check_only;
	int test_lab;   /* --test-lab: the lab test's lab, whose switches allow fault injection */
	int netns;      /* --switches netns: switches and the controller are namespaces */
	long tsc_khz;   /* --tsc-khz: the machine's TSC rate for TCG guests (tsc_early_khz=), 0: none */
	/* --tsc-khz-at NAME=KHZ: the TSC rate of hypervisor NAME's machine for its TCG guests
	 * (each machine's guests read their own machine's TSC); resolved to tsc_at_hyp after load */
	const char *tsc_at_name[TOPO_MAX_HYPERVISORS];
	long tsc_at_khz[TOPO_MAX_HYPERVISORS];
	int tsc_at_hyp[TOPO_MAX_HYPERVISORS];
	int ntsc_at;
	/* --accel-at NAME=kvm|tcg: the accelerator of hypervisor NAME's domains (each machine
	 * has its own: KVM on one, none on another); resolved to accel_at_hyp after load */
	const char *accel_at_name[TOPO_MAX_HYPERVISORS];
	const char *accel_at[TOPO_MAX_HYPERVISORS];
	int accel_at_hyp[TOPO_MAX_HYPERVISORS];
	int naccel_at;
	const char *keys; /* --keys DIR: every node's key file (made when missing); NULL: no keys */
	int print;      /* --json / --dot: print that view on stdout, write no files */
	char tag[16];   /* short name stem of the lab's devices on the machine (see dev_tag) */
};

/* Where a test lab's switch reads the fault to arm (incswitch -F; lab.sh fault). */
#define FAULT_FILE "/run/inclab/incswitch.fault"

static int failed;
static char key_hex[TOPO_MAX_NODES][2 * CTL_KEY_BYTES + 1]; /* --keys: node i's key */

/* Open OUT/<fmt...> (@ap) for writing, created with @mode; on failure print why and remember it. */
static FILE *out_vopen(mode_t mode, const char *dir, const char *fmt, va_list ap)
{
	char path[1024];
	int n = snprintf(path, sizeof(path), "%s/", dir), fd;
	FILE *f;

	vsnprintf(path + n, sizeof(path) - (size_t)n, fmt, ap);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (fd >= 0 && fchmod(fd, mode) < 0) { /* a file left from before keeps no wider mode */
		close(fd);
		fd = -1;
	}
	f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (fd >= 0 && !f)
		close(fd);
	if (!f) {
		fprintf(stderr, "topogen: cannot write %s: %s\n", path, strerror(errno));
		failed = 1;
	}
	return f;
}

/* Open OUT/<fmt...> for writing (mode 0644). */
static FILE *out_open(const char *dir, const char *fmt, ...)
{
	va_list ap;
	FILE *f;

	va_start(ap, fmt);
	f = out_vopen(0644, dir, fmt, ap);
	va_end(ap);
	return f;
}

/* Open OUT/<fmt...> for writing a secret (a key): mode 0600. */
static FILE *secret_open(const char *dir, const char *fmt, ...)
{
	va_list ap;
	FILE *f;

	va_start(ap, fmt);
	f = out_vopen(0600, dir, fmt, ap);
	va_end(ap);
	return f;
}

/* Close a file of out_open(); a write error is printed and remembered. NULL is a no-op. */
static void out_close(FILE *f)
{
	if (f && (ferror(f) | fclose(f))) {
		fprintf(stderr, "topogen: write error: %s\n", strerror(errno));
		failed = 1;
	}
}

/* mkdir -p @path (mode 0755); 0, or -1 with errno set. */
static int mkdir_p(const char *path)
{
	char buf[1024];

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1; *p; p++)
		if (*p == '/') {
			*p = 0;
			if (mkdir(buf, 0755) < 0 && errno != EEXIST)
				return -1;
			*p = '/';
		}
	return mkdir(buf, 0755) < 0 && errno != EEXIST ? -1 : 0;
}

/* MAC of a node's NIC: 52:54:00 (QEMU's OUI), 1a, node index + 1, NIC (0 = mgmt). */
static const char *mac_of(int node, int nic, char buf[18])
{
	snprintf(buf, 18, "52:54:00:1a:%02x:%02x", (unsigned)(node + 1) & 0xffu, (unsigned)nic & 0xffu);
	return buf;
}

/* Is node @i a network namespace (not a VM)? Hosts need rdma_rxe, a kernel
 * module of their own: they are always VMs. */
static int is_ns(const struct topology *t, const struct opts *o, int i)
{
	return o->netns && t->nodes[i].role != TOPO_HOST;
}

/* dev_tag — the stem of every device name the lab makes in the machine's own
 * namespace (bridges, veth ends, taps: "TAG-b3", "TAG-v3", "TAG-t3", "TAG-m0").
 * Interface names have at most 15 characters (IFNAMSIZ - 1): the prefix itself
 * when it has at most 9 (9 + "-" + letter + 3 digits of a link or node index
 * below 256 + 1 spare), else "i" and 8 hex digits of its FNV-1a hash. */
static void dev_tag(struct opts *o)
{
	uint32_t h = 2166136261u;

	if (strlen(o->prefix) <= 9) {
		snprintf(o->tag, sizeof(o->tag), "%s", o->prefix);
		return;
	}
	for (const char *p = o->prefix; *p; p++)
		h = (h ^ (uint8_t)*p) * 16777619u;
	snprintf(o->tag, sizeof(o->tag), "i%08x", h);
}

/* Loopback UDP port on which end @end (0 or 1) of link @l listens. */
static int udp_port(const struct opts *o, int l, int end)
{
	return o->udp_base + 2 * l + end;
}

/* Which end (0 or 1) of link @l node @node is. */
static int link_end(const struct topology *t, int l, int node)
{
	return t->links[l].node[0] == node ? 0 : 1;
}

/* ---- hypervisors (README: "Labs over several hypervisors") ---------------------
 *
 * Without a "hypervisors:" section nothing below changes a file. With one,
 * each node runs on its hypervisor (topo.c places it); hypervisor 0, the first
 * declared, keeps the lab's management network under its usual names, every
 * other one k gets its own (PREFIX-mgmt-NAME, bridge TAG-hK) joined to the
 * first's by a VXLAN tunnel. A tree edge between two machines is a tunnel:
 * QEMU's UDP socket to the peer hypervisor's address when both ends are VMs;
 * else on each machine a VXLAN device on the link's bridge, with the VM's tap
 * or a veth into the namespace node, as a same-machine link has a veth (a
 * VXLAN device moved into a namespace received its frames, but their IP
 * packets were not delivered there on these machines' kernel, 6.18; the
 * bridge and veth were; gretap is not in that kernel). Each tunnel end listens
 * on a UDP port of its own, the one its link end has (--udp-base + 2 x link +
 * end), and sends to its peer's: both ends may be on one machine (the lab
 * test's two connections to it). OUT/tunnels.tsv lists every end, on which
 * hypervisor; OUT/hypervisors.tsv the machines. */

/* Does the topology place nodes on hypervisors? */
static int has_hyp(const struct topology *t)
{
	return t->nhypervisors > 0;
}

/* The hypervisor of node @i, or NULL without hypervisors. */
static const struct topo_hypervisor *hyp_of(const struct topology *t, int i)
{
	return has_hyp(t) ? &t->hypervisors[t->nodes[i].hypervisor] : NULL;
}

/* Does link @l join two different hypervisors? */
static int crosses(const struct topology *t, int l)
{
	return has_hyp(t) && t->nodes[t->links[l].node[0]].hypervisor != t->nodes[t->links[l].node[1]].hypervisor;
}

/* The address at node @i's end of a tunnel on link @l, dotted in @buf: its
 * hypervisor's when the link crosses machines, else 127.0.0.1 as always. */
static const char *tun_addr(const struct topology *t, int l, int i, char buf[16])
{
	return topo_ntoa(crosses(t, l) ? hyp_of(t, i)->addr : 0x7f000001u, buf);
}

/* The management network (libvirt name) and bridge of hypervisor @h into
 * @net and @br (48 bytes each): the lab's own on the first, PREFIX-mgmt-NAME
 * and TAG-hH on the others (15 characters at most: a tag of 9, "-h", 2 digits). */
static void mgmt_names(const struct topology *t, const struct opts *o, int h, char net[48], char br[48])
{
	if (h <= 0) {
		snprintf(net, 48, "%s-mgmt", o->prefix);
		snprintf(br, 48, "%s-mgmt", o->tag);
	} else {
		snprintf(net, 48, "%s-mgmt-%s", o->prefix, t->hypervisors[h].name);
		snprintf(br, 48, "%s-h%d", o->tag, h);
	}
}

/* The UDP port on which the management tunnel of hypervisor @h (>= 1) listens
 * on the first hypervisor (@far 0) or on h (@far 1): the ports after the
 * links' (main() checks they stay in the lab's range). */
static int mgmt_port(const struct topology *t, const struct opts *o, int h, int far)
{
	return o->udp_base + 2 * (t->nlinks + h - 1) + far;
}

/* VNI of the VXLAN tunnel of link @l (1..) and of the management tunnel of
 * hypervisor @h (above every link's): a tunnel end's port sets it apart from
 * other labs' (a socket per port), the VNI only has to match at both ends. */
#define LINK_VNI(l) ((l) + 1)
#define MGMT_VNI(h) (TOPO_MAX_LINKS + (h))

/* xml_text — @s on @f as XML character data: & < > ' " escaped. */
static void xml_text(FILE *f, const char *s)
{
	for (; *s; s++)
		switch (*s) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '\'': fputs("&apos;", f); break;
		case '"': fputs("&quot;", f); break;
		default: fputc(*s, f);
		}
}

/* @a as "a.b.c.d/len" in @buf; returns @buf. */
static const char *cidr(struct topo_cidr a, char buf[24])
{
	char ip[16];
	snprintf(buf, 24, "%s/%d", topo_ntoa(a.addr, ip), a.prefix);
	return buf;
}

/* network-mgmt.xml: the lab's management network, a bridge without a host
 * address; with hypervisors hv/NAME/network-mgmt.xml for each too (@h: the
 * hypervisor, -1: the top-level file, the first hypervisor's). */
static void gen_network(const struct topology *t, const struct opts *o, int h)
{
	FILE *f = h < 0 ? out_open(o->out, "network-mgmt.xml") : out_open(o->out, "hv/%s/network-mgmt.xml", t->hypervisors[h].name);
	char net[48], br[48];

	if (!f)
		return;
	mgmt_names(t, o, h, net, br);
	fprintf(f, "<!-- generated by topogen from %s: management network of lab '%s'", t->file, t->name);
	if (h >= 0)
		fprintf(f, " on hypervisor %s%s", t->hypervisors[h].name,
			h ? ",\n     joined to the first hypervisor's by a VXLAN tunnel (tunnels.tsv)" : "");
	fprintf(f, ".\n     Isolated: a bridge with no host-side address and no forwarding, so the\n"
		   "     machine itself never sends to the lab's addresses. -->\n");
	/* the bridge is a device of the machine: named from the tag (at most 15 characters, dev_tag()) */
	fprintf(f, "<network>\n  <name>%s</name>\n  <bridge name='%s' stp='off' delay='0'/>\n</network>\n", net, br);
	out_close(f);
}

/* The last component of image directory @dir: the name its files get in a
 * hypervisor's storage pool (images/build.sh names it ROLE-HASH, a hash of
 * its inputs: a new image is a new name). */
static const char *image_base(const char *dir)
{
	const char *b = strrchr(dir, '/');
	return b ? b + 1 : dir;
}

/*
 * The files of VM node @i, each into a buffer of 320 bytes: its kernel,
 * initrd, disk (an overlay on its role's image), seed and console log. On
 * the first hypervisor (or without hypervisors) as always: the image
 * directory's files and the state directory's disks/, seeds/, console/. On
 * any other, the files of its storage pool (the directory "images:" names,
 * README: "Labs over several hypervisors"): the image's as IMAGE.vmlinuz,
 * IMAGE.initrd.img, IMAGE.qcow2 (shipped by lab.sh, kept as a cache), the
 * node's as PREFIX-NODE.qcow2, .iso and .log (made by lab.sh through the
 * connection, removed by lab-down). Every part passed path_ok/topo_dir_ok.
 */
static void pool_files(const struct topology *t, const struct opts *o, int i, char *kernel, char *initrd, char *disk,
		       char *seed, char *console)
{
	const struct topo_node *n = &t->nodes[i];
	const char *img = o->image[n->role];

	if (!has_hyp(t) || n->hypervisor == 0) {
		snprintf(kernel, 320, "%s/vmlinuz", img);
		snprintf(initrd, 320, "%s/initrd.img", img);
		snprintf(disk, 320, "%s/disks/%s.qcow2", o->state_dir, n->name);
		snprintf(seed, 320, "%s/seeds/%s.iso", o->state_dir, n->name);
		snprintf(console, 320, "%s/console/%s.log", o->state_dir, n->name);
		return;
	}
	const char *dir = t->hypervisors[n->hypervisor].images;
	snprintf(kernel, 320, "%s/%s.vmlinuz", dir, image_base(img));
	snprintf(initrd, 320, "%s/%s.initrd.img", dir, image_base(img));
	snprintf(disk, 320, "%s/%s-%s.qcow2", dir, o->prefix, n->name);
	snprintf(seed, 320, "%s/%s-%s.iso", dir, o->prefix, n->name);
	snprintf(console, 320, "%s/%s-%s.log", dir, o->prefix, n->name);
}

/* node_accel() - "kvm" or "tcg": the accelerator of node @i's domain, its
 * hypervisor's --accel-at when given, else --accel. */
static const char *node_accel(const struct topology *t, const struct opts *o, int i)
{
	for (int k = 0; k < o->naccel_at; k++)
		if (has_hyp(t) && o->accel_at_hyp[k] == t->nodes[i].hypervisor)
			return o->accel_at[k];
	return o->accel;
}

/* domains/NODE.xml: the libvirt domain of VM node @i (direct kernel boot, its
 * overlay disk and seed, the management NIC, one NIC per tree edge). */
static void gen_domain(const struct topology *t, const struct opts *o, int i)
{
	const struct topo_node *n = &t->nodes[i];
	FILE *f = out_open(o->out, "domains/%s.xml", n->name);
	int kvm = strcmp(node_accel(t, o, i), "kvm") == 0;
	char mac[18], net[48], br[48], me[16], peer[16];

	if (!f)
		return;
	fprintf(f, "<!-- generated by topogen from %s: node %s (%s) of lab '%s' -->\n",
		t->file, n->name, topo_role_name(n->role), t->name);
	fprintf(f, "<domain type='%s'>\n", kvm ? "kvm" : "qemu");
	fprintf(f, "  <name>%s-%s</name>\n", o->prefix, n->name);
	fprintf(f, "  <description>inclab %s node %s of topology %s", topo_role_name(n->role), n->name, t->name);
	if (has_hyp(t)) { /* the URI is the file's text: escaped */
		fprintf(f, " on hypervisor %s (", hyp_of(t, i)->name);
		xml_text(f, hyp_of(t, i)->uri);
		fputc(')', f);
	}
	fprintf(f, "</description>\n");
	fprintf(f, "  <memory unit='MiB'>%d</memory>\n  <vcpu>%d</vcpu>\n", n->memory_mib, n->vcpus);
	fprintf(f, "  <os>\n    <type arch='x86_64' machine='pc'>hvm</type>\n");
	/* on a hypervisor other than the first, everything the domain reads and
	 * writes is in that machine's storage pool (pool_files()) */
	char kernel[320], initrd[320], disk[320], seed[320], console[320];
	pool_files(t, o, i, kernel, initrd, disk, seed, console);
	fprintf(f, "    <kernel>%s</kernel>\n    <initrd>%s</initrd>\n", kernel, initrd);
	/* net.ifnames=0: cloud-init renames NICs by MAC anyway; mitigations=off: TCG speed;
	 * tsc=nowatchdog: under a loaded TCG boot the clocksource watchdog sometimes marked
	 * the TSC unstable and moved the guest to the HPET, where every clock read (one per
	 * captured frame at least) is an emulated device access: 1.3 us instead of 0.11 us
	 * idle, far more under load. The TSC is still calibrated against the HPET.
	 * no_timer_check: the kernel's early check that the IO-APIC delivers timer
	 * ticks waits a few ticks' time; a guest starved of CPU misses it and panics
	 * ("IO-APIC + timer doesn't work!": 1 of 16 hosts booting 1-4-16 on 2 cores).
	 * tsc_early_khz: under TCG the guest's TSC is the machine's; told its rate, the
	 * kernel does not measure it against the emulated PIT, which on a loaded machine
	 * gave 745 MHz for 2594 (a guest clock 3.49 times too fast; lab/tsckhz.c). Under
	 * KVM the guest reads kvm-clock, whose rate KVM gives it. */
	fprintf(f, "    <cmdline>root=/dev/vda rw console=ttyS0,115200 net.ifnames=0 mitigations=off "
		   "tsc=nowatchdog no_timer_check");
	long khz = o->tsc_khz;
	for (int k = 0; k < o->ntsc_at; k++)
		if (has_hyp(t) && o->tsc_at_hyp[k] == t->nodes[i].hypervisor)
			khz = o->tsc_at_khz[k];
	if (khz && !kvm)
		fprintf(f, " tsc_early_khz=%ld", khz);
	fprintf(f, "</cmdline>\n  </os>\n");
	/* tb-cache: QEMU gives TCG a translation cache of 1 GiB, and fills it before it
	 * flushes: a 1 GiB host VM of 1-4-16 had 940 MiB of translated code resident
	 * (its guest RAM: 314 MiB), and the 16 of them took 23 GiB and the OOM killer
	 * took one. TCG_TB_CACHE_MIB caps it (libvirt's <tcg><tb-cache>). */
	if (kvm)
		fprintf(f, "  <features><acpi/></features>\n");
	else
		fprintf(f, "  <features><acpi/><tcg><tb-cache unit='MiB'>%d</tb-cache></tcg></features>\n",
			TCG_TB_CACHE_MIB);
	if (kvm)
		fprintf(f, "  <cpu mode='host-passthrough'/>\n");
	fprintf(f, "  <clock offset='utc'/>\n  <on_poweroff>destroy</on_poweroff>\n  <on_reboot>restart</on_reboot>\n  <on_crash>destroy</on_crash>\n");
	fprintf(f, "  <devices>\n");
	fprintf(f, "    <disk type='file' device='disk'>\n      <driver name='qemu' type='qcow2' cache='unsafe'/>\n"
		   "      <source file='%s'/>\n      <target dev='vda' bus='virtio'/>\n    </disk>\n",
		disk);
	fprintf(f, "    <disk type='file' device='cdrom'>\n      <driver name='qemu' type='raw'/>\n"
		   "      <source file='%s'/>\n      <target dev='hdc' bus='ide'/>\n      <readonly/>\n    </disk>\n",
		seed);
	/* No USB controller (nothing in a lab node uses one), and a virtio-serial
	 * controller with the 2 ports the guest agent needs (0 is the console's) instead
	 * of 31: QEMU's main loop polls a descriptor per queue of every port on each
	 * wake-up, and a TCG lab wakes it for every frame (104 descriptors -> 26). */
	fprintf(f, "    <controller type='usb' model='none'/>\n"
		   "    <controller type='virtio-serial' index='0' ports='2'/>\n");
	mgmt_names(t, o, has_hyp(t) ? n->hypervisor : 0, net, br);
	fprintf(f, "    <interface type='network'>\n      <source network='%s'/>\n      <mac address='%s'/>\n"
		   "      <model type='virtio'/>\n    </interface>\n", net, mac_of(i, 0, mac));
	/* Tree edges: txmode='timer' with event_idx='off' lets QEMU take a guest's transmit
	 * doorbell once and then collect what the guest queues for 150 us, instead of a
	 * doorbell per frame. Under TCG each doorbell waits for QEMU's global lock: it was
	 * 16 % of a leaf switch's time during an AllReduce, 10 % with these settings. */
	for (int p = 0; p < n->nports; p++) {
		int l = n->ports[p].link, e = link_end(t, l, i);
		fprintf(f, "    <!-- %s: tree edge to %s (link at line %d) -->\n", n->ports[p].ifname,
			t->nodes[n->ports[p].peer].name, t->links[l].line);
		if (is_ns(t, o, n->ports[p].peer)) {
			/* The peer is a namespace: the tap (named, so lab-down and the
			 * name checks know it) joins the link's bridge, which a veth joins
			 * to the namespace. name='qemu': QEMU's own virtio-net back end,
			 * for txmode='timer' (no vhost-net on these machines anyway). */
			fprintf(f, "    <interface type='bridge'>\n      <mac address='%s'/>\n"
				   "      <source bridge='%s-b%d'/>\n      <target dev='%s-t%d'/>\n"
				   "      <model type='virtio'/>\n"
				   "      <driver name='qemu' txmode='timer' event_idx='off'/>\n    </interface>\n",
				mac_of(i, p + 1, mac), o->tag, l, o->tag, l);
			continue;
		}
		/* a crossing edge: to the peer's hypervisor, from this one's address */
		fprintf(f, "    <interface type='udp'>\n      <mac address='%s'/>\n"
			   "      <source address='%s' port='%d'>\n        <local address='%s' port='%d'/>\n"
			   "      </source>\n      <model type='virtio'/>\n"
			   "      <driver txmode='timer' event_idx='off'/>\n    </interface>\n",
			mac_of(i, p + 1, mac), tun_addr(t, l, n->ports[p].peer, peer), udp_port(o, l, !e), tun_addr(t, l, i, me),
			udp_port(o, l, e));
	}
	fprintf(f, "    <serial type='pty'>\n      <log file='%s' append='off'/>\n      <target port='0'/>\n    </serial>\n",
		console);
	fprintf(f, "    <console type='pty'>\n      <target type='serial' port='0'/>\n    </console>\n");
	fprintf(f, "    <channel type='unix'>\n      <target type='virtio' name='org.qemu.guest_agent.0'/>\n    </channel>\n");
	fprintf(f, "    <rng model='virtio'>\n      <backend model='random'>/dev/urandom</backend>\n    </rng>\n");
	fprintf(f, "    <memballoon model='none'/>\n  </devices>\n</domain>\n");
	out_close(f);
}

/* The netplan "routes:" of layer-3 interface @k of @n, if it has any. */
static void print_routes(FILE *f, const struct topo_node *n, int k)
{
	char a[24], b[16];
	int first = 1;

	for (int r = 0; r < n->nroutes; r++)
		if (n->routes[r].l3if == k) {
			if (first)
				fprintf(f, "    routes:\n");
			first = 0;
			fprintf(f, "      - {to: %s, via: %s}\n", cidr(n->routes[r].dest, a), topo_ntoa(n->routes[r].via, b));
		}
}

/* seeds/NODE/network-config: netplan v2 of VM node @i (NICs matched by MAC and
 * renamed, addresses, bridges of a switch's shared segments, routes). No link
 * takes IPv6 router advertisements (accept-ra: false): the lab has no router
 * that sends them, and with them on, systemd-networkd-wait-online held every
 * boot about 12 s for its three router solicitations, 4 s apart. */
static void gen_network_config(const struct topology *t, const struct opts *o, int i)
{
	const struct topo_node *n = &t->nodes[i];
	FILE *f = out_open(o->out, "seeds/%s/network-config", n->name);
	char mac[18], a[24], b[16];
	int has_bridge = 0;

	if (!f)
		return;
	fprintf(f, "# generated by topogen from %s: node %s\nversion: 2\nethernets:\n", t->file, n->name);
	fprintf(f, "  mgmt0:\n    match: {macaddress: '%s'}\n    set-name: mgmt0\n    accept-ra: false\n    addresses: [%s/%d]\n",
		mac_of(i, 0, mac), topo_ntoa(n->mgmt, b), t->mgmt.prefix);
	for (int p = 0; p < n->nports; p++) {
		const struct topo_port *pt = &n->ports[p];
		fprintf(f, "  %s:\n    match: {macaddress: '%s'}\n    set-name: %s\n    accept-ra: false\n", pt->ifname,
			mac_of(i, p + 1, mac), pt->ifname);
		if (n->role == TOPO_SWITCH && t->nodes[pt->peer].role == TOPO_SWITCH)
			fprintf(f, "    mtu: %d\n", SWITCH_LINK_MTU);
		for (int k = 0; k < n->nl3ifs; k++) {
			const struct topo_l3if *l3 = &n->l3ifs[k];
			if (l3->segment != pt->segment)
				continue;
			if (l3->bridge) {
				has_bridge = 1;
				continue;
			}
			fprintf(f, "    addresses: [%s]\n", cidr(l3->addr, a));
			print_routes(f, n, k);
		}
	}
	if (has_bridge) {
		fprintf(f, "bridges:\n");
		for (int k = 0; k < n->nl3ifs; k++) {
			const struct topo_l3if *l3 = &n->l3ifs[k];
			const char *sep = "";
			if (!l3->bridge)
				continue;
			fprintf(f, "  %s:\n    interfaces: [", l3->ifname);
			for (int p = 0; p < n->nports; p++)
				if (n->ports[p].segment == l3->segment) {
					fprintf(f, "%s%s", sep, n->ports[p].ifname);
					sep = ", ";
				}
			fprintf(f, "]\n    parameters: {stp: false, forward-delay: 0}\n    accept-ra: false\n    addresses: [%s]\n",
				cidr(l3->addr, a));
			print_routes(f, n, k);
		}
	}
	out_close(f);
}

/* print_node_conf — /etc/inclab/node.conf of node @i, each line after @indent:
 * what the node is, as declared (read by inclab-node-setup and inclab-ready).
 * The same text in a VM's seed and a namespace node's files. */
static void print_node_conf(FILE *f, const struct topology *t, const struct opts *o, int i, const char *in)
{
	const struct topo_node *n = &t->nodes[i];
	char a[24], b[16];

	fprintf(f, "%s# What this node is, as declared in the topology (read by inclab-node-setup, inclab-ready).\n", in);
	fprintf(f, "%sNODE=%s\n%sROLE=%s\n%sRANK=%d\n%sTOPOLOGY=%s\n%sMGMT_ADDR=%s\n", in, n->name, in,
		topo_role_name(n->role), in, n->rank, in, t->name, in, topo_ntoa(n->mgmt, b));
	fprintf(f, "%sADDRS=\"mgmt0=%s/%d", in, topo_ntoa(n->mgmt, b), t->mgmt.prefix);
	for (int k = 0; k < n->nl3ifs; k++)
		fprintf(f, " %s=%s", n->l3ifs[k].ifname, cidr(n->l3ifs[k].addr, a));
	fprintf(f, "\"\n%sPORTS=\"", in);
	for (int p = 0; p < n->nports; p++)
		fprintf(f, "%s%s", p ? " " : "", n->ports[p].ifname);
	fprintf(f, "\"\n");
	/* Where the control plane is: the controller (switch registrations on TCP
	 * 52311, group requests on 52200) and rank 0 of the default group (52223). */
	for (int k = 0; k < t->nnodes; k++)
		if (t->nodes[k].role == TOPO_CONTROLLER)
			fprintf(f, "%sCONTROLLER=%s\n", in, topo_ntoa(t->nodes[k].mgmt, b));
	for (int k = 0; k < t->nnodes; k++)
		if (n->role == TOPO_HOST && t->nodes[k].role == TOPO_HOST && t->nodes[k].rank == 0)
			fprintf(f, "%sMASTER=%s\n", in, topo_ntoa(t->nodes[k].mgmt, b));
	if (n->role == TOPO_HOST)
		fprintf(f, "%sRXE_NETDEV=%s\n%sRXE_ADDR=%s\n", in, n->l3ifs[0].ifname, in, topo_ntoa(n->l3ifs[0].addr.addr, b));
	if (n->role == TOPO_SWITCH && o->test_lab)
		fprintf(f, "%s# a test lab: incswitch allows fault injection, armed from this file\n"
			   "%sFAULT_FILE=%s\n", in, in, FAULT_FILE);
}

/* The topology file as the controller reads it (libyaml), each line after @in. */
static void print_source(FILE *f, const struct topology *t, const char *in)
{
	for (const char *s = t->source; *s;) {
		const char *e = strchr(s, '\n');
		size_t len = e ? (size_t)(e - s) : strlen(s);
		if (len)
			fprintf(f, "%s%.*s\n", in, (int)len, s);
		else
			fputc('\n', f);
		s += len + (e != NULL);
	}
}

/* The controller's table of every node's key ("NODE HEX" lines), each line after @in. */
static void print_key_table(FILE *f, const struct topology *t, const char *in)
{
	for (int k = 0; k < t->nnodes; k++)
		fprintf(f, "%s%s %s\n", in, t->nodes[k].name, key_hex[k]);
}

/*
 * --keys DIR: make DIR (0700) and every node's missing key in it, and read
 * them all into key_hex. 0, or -1 with the reason printed.
 */
static int load_keys(const struct topology *t, const char *dir)
{
	unsigned char key[CTL_KEY_BYTES];
	char path[1024], err[1200];

	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		fprintf(stderr, "topogen: --keys: cannot create %s: %s\n", dir, strerror(errno));
		return -1;
	}
	for (int i = 0; i < t->nnodes; i++) {
		snprintf(path, sizeof(path), "%s/%s.key", dir, t->nodes[i].name);
		if (ctl_key_make(path, err, sizeof(err)) < 0 || ctl_key_load(path, key, err, sizeof(err)) < 0) {
			fprintf(stderr, "topogen: --keys: %s\n", err);
			return -1;
		}
		ctl_key_hex(key, key_hex[i]);
		ctl_key_wipe(key);
	}
	return 0;
}

/* seeds/NODE/user-data: hostname, node.conf (and the controller's topology)
 * written by cloud-init, inclab-node-setup as its bootcmd. */
static void gen_user_data(const struct topology *t, const struct opts *o, int i)
{
	const struct topo_node *n = &t->nodes[i];
	FILE *f = key_hex[i][0] ? secret_open(o->out, "seeds/%s/user-data", n->name)
				: out_open(o->out, "seeds/%s/user-data", n->name);

	if (!f)
		return;
	fprintf(f, "#cloud-config\n# generated by topogen from %s: node %s (%s) of lab '%s'\n", t->file, n->name,
		topo_role_name(n->role), t->name);
	fprintf(f, "hostname: %s\nmanage_etc_hosts: true\nwrite_files:\n", n->name);
	fprintf(f, "  - path: /etc/inclab/node.conf\n    permissions: '0644'\n    content: |\n");
	print_node_conf(f, t, o, i, "      ");
	if (key_hex[i][0]) { /* its key alone; the controller's seed also the table (ctlauth.h) */
		fprintf(f, "  - path: " CTL_NODE_KEY_FILE "\n    permissions: '0600'\n    content: |\n      %s\n", key_hex[i]);
		if (n->role == TOPO_CONTROLLER) {
			fprintf(f, "  - path: " CTL_KEY_TABLE_FILE "\n    permissions: '0600'\n    content: |\n");
			print_key_table(f, t, "      ");
		}
	}
	if (n->role == TOPO_CONTROLLER) {
		/* The controller reads the topology itself (libyaml), as declared. */
		/* |2: the content is indented 2 more than this mapping (6), said
		 * rather than guessed from its first line, so a file whose first
		 * line is indented deeper is still written as it is, and no line
		 * of it can end the scalar and become a key of the cloud-config */
		fprintf(f, "  - path: /etc/inclab/topology.yaml\n    permissions: '0644'\n    content: |2\n");
		print_source(f, t, "      ");
	}
	/* bootcmd: every boot, last in the init stage (images/guest/.../91-inclab-modules.cfg) */
	fprintf(f, "bootcmd:\n  - [/usr/local/sbin/inclab-node-setup]\n");
	out_close(f);
}

/* gen_net_sh — nodes/NODE/net.sh: the netplan network-config of node @i as
 * ip(8) commands, run by lab.sh inside the node's namespace once its devices
 * (mgmt0 and one per tree edge, named as in the VM) are there. Idempotent:
 * addresses and routes are replaced, the bridge made only when missing. */
static void gen_net_sh(const struct topology *t, const struct opts *o, int i)
{
	const struct topo_node *n = &t->nodes[i];
	FILE *f = out_open(o->out, "nodes/%s/net.sh", n->name);
	char a[24], b[16];

	if (!f)
		return;
	fprintf(f, "#!/bin/sh\n# generated by topogen from %s: network of node %s, a namespace of lab '%s'\n"
		   "# (what seeds/%s/network-config is to its VM)\nset -e\n", t->file, n->name, t->name, n->name);
	/* No IPv6: the VMs' links carry none either, and nothing here should talk. */
	fprintf(f, "sysctl -q -w net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1\n");
	fprintf(f, "ip link set lo up\n");
	fprintf(f, "ip addr replace %s/%d dev mgmt0\nip link set mgmt0 up\n", topo_ntoa(n->mgmt, b), t->mgmt.prefix);
	for (int p = 0; p < n->nports; p++) {
		const struct topo_port *pt = &n->ports[p];
		int mtu = n->role == TOPO_SWITCH && t->nodes[pt->peer].role == TOPO_SWITCH ? SWITCH_LINK_MTU : 1500;
		fprintf(f, "ip link set %s mtu %d up\n", pt->ifname, mtu);
	}
	for (int k = 0; k < n->nl3ifs; k++) {
		const struct topo_l3if *l3 = &n->l3ifs[k];
		if (l3->bridge) {
			fprintf(f, "ip link show %s >/dev/null 2>&1 || ip link add %s type bridge stp_state 0 forward_delay 0\n",
				l3->ifname, l3->ifname);
			for (int p = 0; p < n->nports; p++)
				if (n->ports[p].segment == l3->segment)
					fprintf(f, "ip link set %s master %s\n", n->ports[p].ifname, l3->ifname);
			fprintf(f, "ip link set %s up\n", l3->ifname);
		}
		fprintf(f, "ip addr replace %s dev %s\n", cidr(l3->addr, a), l3->ifname);
	}
	for (int k = 0; k < n->nl3ifs; k++)
		for (int r = 0; r < n->nroutes; r++)
			if (n->routes[r].l3if == k)
				fprintf(f, "ip route replace %s via %s dev %s\n", cidr(n->routes[r].dest, a),
					topo_ntoa(n->routes[r].via, b), n->l3ifs[k].ifname);
	out_close(f);
}

/* gen_ns_node — nodes/NODE/: what a namespace node gets instead of a seed. */
static void gen_ns_node(const struct topology *t, const struct opts *o, int i)
{
	char dir[1024];
	FILE *f;

	snprintf(dir, sizeof(dir), "%s/nodes/%s", o->out, t->nodes[i].name);
	if (mkdir_p(dir) < 0) {
		fprintf(stderr, "topogen: cannot create %s: %s\n", dir, strerror(errno));
		failed = 1;
		return;
	}
	if ((f = out_open(o->out, "nodes/%s/node.conf", t->nodes[i].name))) {
		print_node_conf(f, t, o, i, "");
		out_close(f);
	}
	if (t->nodes[i].role == TOPO_CONTROLLER && (f = out_open(o->out, "nodes/%s/topology.yaml", t->nodes[i].name))) {
		print_source(f, t, "");
		out_close(f);
	}
	if (key_hex[i][0] && (f = secret_open(o->out, "nodes/%s/node.key", t->nodes[i].name))) {
		fprintf(f, "%s\n", key_hex[i]);
		out_close(f);
	}
	if (key_hex[i][0] && t->nodes[i].role == TOPO_CONTROLLER &&
	    (f = secret_open(o->out, "nodes/%s/node-keys", t->nodes[i].name))) {
		print_key_table(f, t, "");
		out_close(f);
	}
	gen_net_sh(t, o, i);
}

/* seeds/NODE/: the NoCloud seed of VM node @i (meta-data, user-data, network-config). */
static void gen_seed(const struct topology *t, const struct opts *o, int i)
{
	char dir[1024];
	FILE *f;

	snprintf(dir, sizeof(dir), "%s/seeds/%s", o->out, t->nodes[i].name);
	if (mkdir_p(dir) < 0) {
		fprintf(stderr, "topogen: cannot create %s: %s\n", dir, strerror(errno));
		failed = 1;
		return;
	}
	if ((f = out_open(o->out, "seeds/%s/meta-data", t->nodes[i].name))) {
		fprintf(f, "instance-id: %s-%s\nlocal-hostname: %s\n", o->prefix, t->nodes[i].name, t->nodes[i].name);
		out_close(f);
	}
	gen_user_data(t, o, i);
	gen_network_config(t, o, i);
}

/* MTU of the link between nodes @a and @b inside the nodes: SWITCH_LINK_MTU between two switches, else 1500. */
static int link_mtu(const struct topology *t, int a, int b)
{
	return t->nodes[a].role == TOPO_SWITCH && t->nodes[b].role == TOPO_SWITCH ? SWITCH_LINK_MTU : 1500;
}

/* gen_wires — wires.tsv (netns mode): every device lab.sh makes to join the
 * namespaces, the host VMs and the management bridge, named here once:
 *   veth   a link between two namespaces: one veth, an end in each
 *   bridge a link between a namespace (node_a) and a host VM (node_b): bridge
 *          BRIDGE and veth VETH in the machine's namespace (no address), the
 *          veth's other end if_a in node_a, the VM's tap TAP on the bridge
 *   mgmt   node_a's mgmt0, a veth whose other end VETH joins BRIDGE (the
 *          lab's management network)
 * With hypervisors a last column names the hypervisor that makes the line's
 * devices (its nodes'); a link that crosses machines is no line here but its
 * two ends in tunnels.tsv (a VM's end with its bridge and tap there). */
static void gen_wires(const struct topology *t, const struct opts *o)
{
	FILE *f = out_open(o->out, "wires.tsv");
	char net[48], br[48];

	if (!f)
		return;
	fprintf(f, "# kind\tlink\tnode_a\tif_a\tnode_b\tif_b\tmtu\tbridge\tveth\ttap%s\n", has_hyp(t) ? "\thypervisor" : "");
	for (int i = 0; i < t->nnodes; i++)
		if (is_ns(t, o, i)) {
			mgmt_names(t, o, has_hyp(t) ? t->nodes[i].hypervisor : 0, net, br);
			fprintf(f, "mgmt\t-\t%s\tmgmt0\t-\t-\t1500\t%s\t%s-m%d\t-", t->nodes[i].name, br, o->tag, i);
			if (has_hyp(t))
				fprintf(f, "\t%s", hyp_of(t, i)->name);
			fputc('\n', f);
		}
	for (int l = 0; l < t->nlinks; l++) {
		const struct topo_link *k = &t->links[l];
		int a = k->node[0], b = k->node[1];
		int mtu = t->nodes[a].role == TOPO_SWITCH && t->nodes[b].role == TOPO_SWITCH ? SWITCH_LINK_MTU : 1500;
		if (!is_ns(t, o, a) && !is_ns(t, o, b))
			continue; /* two VMs: a UDP tunnel, as in VM mode */
		if (is_ns(t, o, a) && is_ns(t, o, b)) {
			if (crosses(t, l))
				continue; /* a tunnel end and a bridge on each side: tunnels.tsv */
			fprintf(f, "veth\t%d\t%s\tto-%s\t%s\tto-%s\t%d\t-\t-\t-", l, t->nodes[a].name, t->nodes[b].name,
				t->nodes[b].name, t->nodes[a].name, mtu);
			if (has_hyp(t))
				fprintf(f, "\t%s", hyp_of(t, a)->name);
			fputc('\n', f);
			continue;
		}
		if (!is_ns(t, o, a)) {
			int x = a;
			a = b;
			b = x;
		}
		if (crosses(t, l))
			continue; /* a tunnel end and a bridge on each side: tunnels.tsv */
		fprintf(f, "bridge\t%d\t%s\tto-%s\t%s\tto-%s\t%d\t%s-b%d\t%s-v%d\t%s-t%d", l, t->nodes[a].name,
			t->nodes[b].name, t->nodes[b].name, t->nodes[a].name, mtu, o->tag, l, o->tag, l, o->tag, l);
		if (has_hyp(t))
			fprintf(f, "\t%s", hyp_of(t, a)->name);
		fputc('\n', f);
	}
	out_close(f);
}

/* One line of tunnels.tsv on @f (gen_tunnels()); a negative @link, @lport,
 * @rport or @vni is written "-". */
static void tunnel_line(FILE *f, const char *hyp, const char *kind, int link, const char *node, const char *ifname,
			const char *peer, const char *peer_hyp, const char *local, int lport, const char *remote, int rport,
			int vni, const char *dev, const char *bridge, const char *veth, const char *tap, int mtu)
{
	char n[4][16];
	const int v[4] = { link, lport, rport, vni };

	for (int k = 0; k < 4; k++)
		snprintf(n[k], sizeof(n[k]), v[k] < 0 ? "-" : "%d", v[k]);
	fprintf(f, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\n", hyp, kind, n[0], node, ifname,
		peer, peer_hyp, local, n[1], remote, n[2], n[3], dev, bridge, veth, tap, mtu);
}

/* gen_tunnels — tunnels.tsv (with hypervisors): every end of a tunnel between
 * machines, one line each, on the hypervisor that makes it:
 *   mgmt    VXLAN DEVICE on the hypervisor's management BRIDGE, to the first
 *           hypervisor's (which has one such end per other hypervisor)
 *   udp     a VM's QEMU UDP socket on a crossing edge (in its domain XML:
 *           nothing to make; lab-up checks LPORT is free)
 *   netns   VXLAN DEVICE on BRIDGE, and veth VETH from BRIDGE into namespace
 *           node NODE, named IF there
 *   vm      VXLAN DEVICE on BRIDGE, where VM node NODE's TAP is
 * A VXLAN end (VNI, no learning) listens on LPORT of LOCAL, its hypervisor's
 * address, and sends every frame to RPORT of REMOTE, its peer's. Bridges,
 * veths and taps are named as a same-machine link's (wires.tsv), the second
 * namespace end's with other letters. */
static void gen_tunnels(const struct topology *t, const struct opts *o)
{
	FILE *f = out_open(o->out, "tunnels.tsv");
	char net[48], br[48], hbr[48], a[16], b[16], dev[24], fdev[24];

	if (!f)
		return;
	fprintf(f, "# hypervisor\tkind\tlink\tnode\tif\tpeer\tpeer_hypervisor\tlocal\tlport\tremote\trport"
		   "\tvni\tdevice\tbridge\tveth\ttap\tmtu\n");
	mgmt_names(t, o, 0, net, hbr);
	for (int h = 1; h < t->nhypervisors; h++) {
		const struct topo_hypervisor *x = &t->hypervisors[0], *y = &t->hypervisors[h];
		mgmt_names(t, o, h, net, br);
		snprintf(dev, sizeof(dev), "%s-g%d", o->tag, h);
		snprintf(fdev, sizeof(fdev), "%s-j%d", o->tag, h);
		tunnel_line(f, x->name, "mgmt", -1, "-", "-", "-", y->name, topo_ntoa(x->addr, a), mgmt_port(t, o, h, 0),
			    topo_ntoa(y->addr, b), mgmt_port(t, o, h, 1), MGMT_VNI(h), dev, hbr, "-", "-", 1500);
		tunnel_line(f, y->name, "mgmt", -1, "-", "-", "-", x->name, topo_ntoa(y->addr, a), mgmt_port(t, o, h, 1),
			    topo_ntoa(x->addr, b), mgmt_port(t, o, h, 0), MGMT_VNI(h), fdev, br, "-", "-", 1500);
	}
	for (int l = 0; l < t->nlinks; l++) {
		const struct topo_link *k = &t->links[l];
		int mtu = link_mtu(t, k->node[0], k->node[1]);
		if (!crosses(t, l))
			continue;
		for (int e = 0; e < 2; e++) {
			int me = k->node[e], peer = k->node[!e], udp = !is_ns(t, o, me) && !is_ns(t, o, peer);
			char ifname[24], veth[24], tap[24];
			snprintf(ifname, sizeof(ifname), "to-%s", t->nodes[peer].name);
			/* both ends may be on one machine: each its own names. A VM's end
			 * has the bridge its domain names (TAG-bL); a namespace's the
			 * other one (TAG-cL, veth TAG-wL) when its peer is a VM or it
			 * is end 1; the VXLAN device TAG-xL at end 0, TAG-yL at end 1 */
			int second = is_ns(t, o, me) && (!is_ns(t, o, peer) || e == 1);
			snprintf(dev, sizeof(dev), "%s-%c%d", o->tag, e ? 'y' : 'x', l);
			snprintf(br, sizeof(br), "%s-%c%d", o->tag, second ? 'c' : 'b', l);
			snprintf(veth, sizeof(veth), "%s-%c%d", o->tag, second ? 'w' : 'v', l);
			snprintf(tap, sizeof(tap), "%s-t%d", o->tag, l);
			tunnel_line(f, hyp_of(t, me)->name, udp ? "udp" : is_ns(t, o, me) ? "netns" : "vm", l, t->nodes[me].name,
				    ifname, t->nodes[peer].name, hyp_of(t, peer)->name, tun_addr(t, l, me, a), udp_port(o, l, e),
				    tun_addr(t, l, peer, b), udp_port(o, l, !e), udp ? -1 : LINK_VNI(l), udp ? "-" : dev,
				    udp ? "-" : br, !udp && is_ns(t, o, me) ? veth : "-", !udp && !is_ns(t, o, me) ? tap : "-", mtu);
		}
	}
	out_close(f);
}

/* hypervisors.tsv: each hypervisor, its connection, tunnel address,
 * management network, the nodes placed on it, and (all but the first) the
 * directory and name of its storage pool (README). */
static void gen_hypervisors(const struct topology *t, const struct opts *o)
{
	FILE *f = out_open(o->out, "hypervisors.tsv");
	char net[48], br[48], a[16];

	if (!f)
		return;
	fprintf(f, "# hypervisor\turi\taddress\tnetwork\tbridge\tmemory_mib\tnodes\timages\tpool\n");
	for (int h = 0; h < t->nhypervisors; h++) {
		const char *sep = "";
		mgmt_names(t, o, h, net, br);
		fprintf(f, "%s\t%s\t%s\t%s\t%s\t%d\t", t->hypervisors[h].name, t->hypervisors[h].uri,
			topo_ntoa(t->hypervisors[h].addr, a), net, br, t->hypervisors[h].memory_mib);
		for (int i = 0; i < t->nnodes; i++)
			if (t->nodes[i].hypervisor == h) {
				fprintf(f, "%s%s", sep, t->nodes[i].name);
				sep = " ";
			}
		if (!*sep)
			fputc('-', f);
		/* its storage pool (lab.sh makes it), none on the first: its files are this machine's */
		if (h == 0)
			fprintf(f, "\t-\t-\n");
		else
			fprintf(f, "\t%s\t%s-images\n", t->hypervisors[h].images, o->prefix);
	}
	out_close(f);
}

/* ---- lab.json: the lab's static facts ------------------------------------------
 *
 * Built with jansson, which quotes every string (json_string() refuses text
 * that is not UTF-8: the strings here are names, addresses and a printable
 * ASCII path, so a refusal is a bug, reported as a failure). The keys are
 * documented in README.md ("lab-status FORMAT=json"); `lab.sh status --format
 * json` adds the live keys (state, ready, ...) with jq. A change of a key's
 * meaning increases JSON_VERSION. */
#define JSON_VERSION 1

static int json_failed;

/* jset — @o[@k] = @v (a NULL @v: json_failed). */
static void jset(json_t *o, const char *k, json_t *v)
{
	if (!v || json_object_set_new(o, k, v) < 0)
		json_failed = 1;
}

/* jadd — append @v to array @a (a NULL @v: json_failed). */
static void jadd(json_t *a, json_t *v)
{
	if (!v || json_array_append_new(a, v) < 0)
		json_failed = 1;
}

/* jstr_or_null — @s as a JSON string, or null when @s is NULL. */
static json_t *jstr_or_null(const char *s)
{
	return s ? json_string(s) : json_null();
}

/* jaddr — {"interface": IF, "address": "a.b.c.d", "prefix": N, "subnet": "net/N"}. */
static json_t *jaddr(const char *ifname, struct topo_cidr c)
{
	json_t *o = json_object();
	struct topo_cidr net = { c.addr & topo_mask(c.prefix), c.prefix };
	char b[16], s[24];

	if (!o)
		return NULL;
	jset(o, "interface", json_string(ifname));
	jset(o, "address", json_string(topo_ntoa(c.addr, b)));
	jset(o, "prefix", json_integer(c.prefix));
	jset(o, "subnet", json_string(cidr(net, s)));
	return o;
}

/* json_node — the static facts of node @i (README: "Keys of a node"). */
static json_t *json_node(const struct topology *t, const struct opts *o, int i)
{
	const struct topo_node *n = &t->nodes[i];
	json_t *j = json_object(), *ifs = json_array(), *addrs = json_array(), *children = json_array(), *m;
	char inst[64];

	if (!j || !ifs || !addrs || !children) {
		json_decref(j), json_decref(ifs), json_decref(addrs), json_decref(children);
		return NULL;
	}
	snprintf(inst, sizeof(inst), "%s-%s", o->prefix, n->name);
	jset(j, "name", json_string(n->name));
	jset(j, "role", json_string(topo_role_name(n->role)));
	jset(j, "root", json_boolean(i == t->root));
	jset(j, "rank", n->role == TOPO_HOST ? json_integer(n->rank) : json_null());
	jset(j, "kind", json_string(is_ns(t, o, i) ? "netns" : "vm"));
	jset(j, "domain", jstr_or_null(is_ns(t, o, i) ? NULL : inst));
	jset(j, "netns", jstr_or_null(is_ns(t, o, i) ? inst : NULL));
	jset(j, "parent", jstr_or_null(n->parent >= 0 ? t->nodes[n->parent].name : NULL));
	if (has_hyp(t)) { /* only with hypervisors: a lab on one machine has the keys it always had */
		jset(j, "hypervisor", json_string(hyp_of(t, i)->name));
		jset(j, "placed", json_string(n->placed ? "file" : "balance"));
	}
	for (int k = 0; k < t->nnodes; k++)
		if (t->nodes[k].parent == i)
			jadd(children, json_string(t->nodes[k].name));
	jset(j, "children", children);
	jset(j, "vcpus", json_integer(n->vcpus));
	jset(j, "memory_mib", json_integer(n->memory_mib));
	m = jaddr("mgmt0", (struct topo_cidr){ n->mgmt, t->mgmt.prefix });
	jset(j, "management", m);
	for (int k = 0; k < n->nl3ifs; k++)
		jadd(addrs, jaddr(n->l3ifs[k].ifname, n->l3ifs[k].addr));
	jset(j, "addresses", addrs);
	/* interfaces: mgmt0, each tree-edge port (its bridge, if any), each bridge (its ports) */
	if ((m = json_object())) {
		jset(m, "name", json_string("mgmt0"));
		jset(m, "type", json_string("management"));
		jset(m, "mtu", json_integer(1500));
		jset(m, "peer", json_null());
		jset(m, "link", json_null());
		jset(m, "bridge", json_null());
		jset(m, "ports", json_null());
	}
	jadd(ifs, m);
	for (int p = 0; p < n->nports; p++) {
		const struct topo_port *pt = &n->ports[p];
		const char *br = NULL;
		for (int k = 0; k < n->nl3ifs; k++)
			if (n->l3ifs[k].bridge && n->l3ifs[k].segment == pt->segment)
				br = n->l3ifs[k].ifname;
		if ((m = json_object())) {
			jset(m, "name", json_string(pt->ifname));
			jset(m, "type", json_string("port"));
			jset(m, "mtu", json_integer(link_mtu(t, i, pt->peer)));
			jset(m, "peer", json_string(t->nodes[pt->peer].name));
			jset(m, "link", json_integer(pt->link));
			jset(m, "bridge", jstr_or_null(br));
			jset(m, "ports", json_null());
		}
		jadd(ifs, m);
	}
	for (int k = 0; k < n->nl3ifs; k++) {
		json_t *ports;
		if (!n->l3ifs[k].bridge)
			continue;
		if ((m = json_object()) && (ports = json_array())) {
			int mtu = 0;
			for (int p = 0; p < n->nports; p++)
				if (n->ports[p].segment == n->l3ifs[k].segment) {
					jadd(ports, json_string(n->ports[p].ifname));
					mtu = link_mtu(t, i, n->ports[p].peer);
				}
			jset(m, "name", json_string(n->l3ifs[k].ifname));
			jset(m, "type", json_string("bridge"));
			jset(m, "mtu", json_integer(mtu));
			jset(m, "peer", json_null());
			jset(m, "link", json_null());
			jset(m, "bridge", json_null());
			jset(m, "ports", ports);
		} else {
			json_decref(m);
			m = NULL;
		}
		jadd(ifs, m);
	}
	jset(j, "interfaces", ifs);
	return j;
}

/* json_lab — the lab's static facts: what topogen knows of it (README). NULL on failure. */
static json_t *json_lab(const struct topology *t, const struct opts *o)
{
	json_t *j = json_object(), *topo = json_object(), *mgmt = json_object(), *nodes = json_array(),
	       *links = json_array();
	char s[24], br[32];

	if (!j || !topo || !mgmt || !nodes || !links) {
		json_decref(j), json_decref(topo), json_decref(mgmt), json_decref(nodes), json_decref(links);
		return NULL;
	}
	json_failed = 0;
	jset(j, "version", json_integer(JSON_VERSION));
	jset(j, "lab", json_string(o->prefix));
	jset(topo, "name", json_string(t->name));
	jset(topo, "file", json_string(t->file));
	jset(topo, "root", json_string(t->nodes[t->root].name));
	jset(topo, "nodes", json_integer(t->nnodes));
	jset(topo, "hosts", json_integer(t->nhosts));
	jset(topo, "links", json_integer(t->nlinks));
	jset(j, "topology", topo);
	jset(j, "switches", json_string(o->netns ? "netns" : "vm"));
	snprintf(br, sizeof(br), "%s-mgmt", o->tag);
	jset(mgmt, "subnet", json_string(cidr(t->mgmt, s)));
	jset(mgmt, "bridge", json_string(br));
	snprintf(br, sizeof(br), "%s-mgmt", o->prefix);
	jset(mgmt, "network", json_string(br));
	jset(j, "management", mgmt);
	if (has_hyp(t)) {
		json_t *hyps = json_array();
		for (int h = 0; hyps && h < t->nhypervisors; h++) {
			json_t *hj = json_object(), *members = json_array();
			char net[48], hbr[48];
			if (!hj || !members) {
				json_decref(hj), json_decref(members);
				json_failed = 1;
				continue;
			}
			mgmt_names(t, o, h, net, hbr);
			jset(hj, "name", json_string(t->hypervisors[h].name));
			jset(hj, "uri", json_string(t->hypervisors[h].uri));
			jset(hj, "address", json_string(topo_ntoa(t->hypervisors[h].addr, s)));
			jset(hj, "network", json_string(net));
			jset(hj, "bridge", json_string(hbr));
			jset(hj, "memory_mib", json_integer(t->hypervisors[h].memory_mib));
			for (int i = 0; i < t->nnodes; i++)
				if (t->nodes[i].hypervisor == h)
					jadd(members, json_string(t->nodes[i].name));
			jset(hj, "nodes", members);
			jadd(hyps, hj);
		}
		jset(j, "hypervisors", hyps);
	}
	for (int i = 0; i < t->nnodes; i++)
		jadd(nodes, json_node(t, o, i));
	jset(j, "nodes", nodes);
	for (int l = 0; l < t->nlinks; l++) {
		const struct topo_link *k = &t->links[l];
		struct topo_cidr net = { k->addr[0].addr & topo_mask(k->addr[0].prefix), k->addr[0].prefix };
		json_t *lj = json_object(), *ends = json_array();
		if (!lj || !ends) {
			json_decref(lj), json_decref(ends);
			json_failed = 1;
			continue;
		}
		jset(lj, "index", json_integer(l));
		jset(lj, "subnet", json_string(cidr(net, s)));
		jset(lj, "mtu", json_integer(link_mtu(t, k->node[0], k->node[1])));
		if (has_hyp(t)) /* how it crosses machines: QEMU's UDP between two VMs, else VXLAN; null: it does not */
			jset(lj, "tunnel", !crosses(t, l) ? json_null()
				: json_string(!is_ns(t, o, k->node[0]) && !is_ns(t, o, k->node[1]) ? "udp" : "vxlan"));
		for (int e = 0; e < 2; e++) {
			json_t *ej = json_object();
			char ifname[32];
			if (ej) {
				snprintf(ifname, sizeof(ifname), "to-%s", t->nodes[k->node[!e]].name);
				jset(ej, "node", json_string(t->nodes[k->node[e]].name));
				jset(ej, "interface", json_string(ifname));
				jset(ej, "address", json_string(topo_ntoa(k->addr[e].addr, s)));
				jset(ej, "prefix", json_integer(k->addr[e].prefix));
			}
			jadd(ends, ej);
		}
		jset(lj, "ends", ends);
		jadd(links, lj);
	}
	jset(j, "links", links);
	if (json_failed) {
		json_decref(j);
		return NULL;
	}
	return j;
}

/* print_json — lab.json's text on @f (2-space indent, keys in the order made); 0 or -1. */
static int print_json(FILE *f, const struct topology *t, const struct opts *o)
{
	json_t *j = json_lab(t, o);
	int rc;

	if (!j) {
		fprintf(stderr, "topogen: cannot build the lab's JSON (out of memory, or a string that is not UTF-8)\n");
		return -1;
	}
	rc = json_dumpf(j, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	fputc('\n', f);
	json_decref(j);
	return rc;
}

/* ---- topology.dot: the topology as a graphviz graph ----------------------------- */

/* Colours of the roles (fill) and of the management network: ColorBrewer's
 * Pastel1/Set2-like tones that stay apart in grey print. */
#define DOT_CONTROLLER_FILL "#fdd49e"
#define DOT_ROOT_FILL "#6baed6"
#define DOT_SWITCH_FILL "#c6dbef"
#define DOT_HOST_FILL "#c7e9c0"
#define DOT_MGMT_COLOR "#969696"
#define DOT_HV_COLOR "#d94801" /* hypervisors' boxes and the edges between them */
/* the id of the management network's node: '_' is no character of a node name (topo_word_ok) */
#define DOT_MGMT_ID "_management"

/*
 * dot_str() - @s on @f as one DOT double-quoted string. '"' and '\' are
 * escaped ('\\' is one backslash in a label, so no graphviz substitution such
 * as \N or \G, and no \l or \r, can be made of the text); a line break becomes
 * the label escape \n; any other control byte or non-ASCII byte becomes '?'
 * (graphviz reads UTF-8; the strings here are names, addresses and printable
 * ASCII paths).
 */
static void dot_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", f);
		else if (c < 0x20 || c > 0x7e)
			fputc('?', f);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

/* dot_attr — " NAME=VALUE" with VALUE a DOT string (dot_str). */
static void dot_attr(FILE *f, const char *name, const char *value)
{
	fprintf(f, " %s=", name);
	dot_str(f, value);
}

/*
 * print_dot() - the topology as an undirected graphviz graph on @f: the tree
 * from the root down (parent first on each edge, so dot ranks it), hosts in
 * rank order; shapes and colours by role (controller: hexagon; switches:
 * boxes, the root darker; hosts: ellipses), namespace nodes dashed; each node
 * labelled with its name, role (rank) and management address, each edge with
 * the address and prefix of each end, the parent's (left) over the child's;
 * the management network one dashed note beside the controller (it joins
 * every node: drawn once, each node's address in its label).
 */
static void print_dot(FILE *f, const struct topology *t, const struct opts *o)
{
	char label[512], a[24], b[24];
	int ctl = -1;

	fputs("graph ", f);
	dot_str(f, t->name);
	fputs(" {\n  graph [", f);
	snprintf(label, sizeof(label), "inclab topology %s (%s)\nswitches and controller as %s; "
		 "each link: the left end's address over the right end's", t->name, t->file,
		 o->netns ? "network namespaces (dashed)" : "VMs");
	dot_attr(f, "label", label);
	/* left to right: a rank of 16 hosts (1-4-16) is a column, not a line 4,000 pixels long */
	fputs(" labelloc=\"t\" rankdir=\"LR\" fontname=\"Helvetica\" fontsize=\"16\" nodesep=\"0.25\" ranksep=\"1.1\"]\n", f);
	fputs("  node [fontname=\"Helvetica\" fontsize=\"12\" style=\"filled\" penwidth=\"1.2\"]\n", f);
	fputs("  edge [fontname=\"Helvetica\" fontsize=\"10\" penwidth=\"1.5\"]\n", f);
	for (int i = 0; i < t->nnodes; i++) {
		const struct topo_node *n = &t->nodes[i];
		const char *shape, *fill, *style = is_ns(t, o, i) ? "filled,dashed" : "filled";
		char role[40];
		switch (n->role) {
		case TOPO_CONTROLLER:
			shape = "hexagon", fill = DOT_CONTROLLER_FILL;
			snprintf(role, sizeof(role), "controller (incctl)");
			ctl = i;
			break;
		case TOPO_SWITCH:
			shape = "box", fill = i == t->root ? DOT_ROOT_FILL : DOT_SWITCH_FILL;
			snprintf(role, sizeof(role), "%s", i == t->root ? "root switch" : "switch");
			style = is_ns(t, o, i) ? "filled,rounded,dashed" : "filled,rounded";
			break;
		default:
			shape = "ellipse", fill = DOT_HOST_FILL;
			snprintf(role, sizeof(role), "host, rank %d", n->rank);
			break;
		}
		snprintf(label, sizeof(label), "%s\n%s%s\nmgmt %s", n->name, role, is_ns(t, o, i) ? ", netns" : "",
			 topo_ntoa(n->mgmt, a));
		fputs("  ", f);
		dot_str(f, n->name);
		fprintf(f, " [shape=\"%s\" fillcolor=\"%s\" style=\"%s\"", shape, fill, style);
		dot_attr(f, "label", label);
		fputs("]\n", f);
	}
	/* with hypervisors: a dashed box around each machine's nodes */
	for (int h = 0; h < t->nhypervisors; h++) {
		fprintf(f, "  subgraph \"cluster_hv_%s\" {\n    graph [style=\"dashed\" color=\"" DOT_HV_COLOR "\" labeljust=\"l\"", t->hypervisors[h].name);
		snprintf(label, sizeof(label), "hypervisor %s (%s)", t->hypervisors[h].name, topo_ntoa(t->hypervisors[h].addr, a));
		dot_attr(f, "label", label);
		fputs("]\n   ", f);
		for (int i = 0; i < t->nnodes; i++)
			if (t->nodes[i].hypervisor == h) {
				fputc(' ', f);
				dot_str(f, t->nodes[i].name);
			}
		fputs("\n  }\n", f);
	}
	/* the management network, summarized: one note beside the controller */
	snprintf(label, sizeof(label), "management network %s\njoins all %d nodes (mgmt0);\ncontrol traffic only",
		 cidr(t->mgmt, a), t->nnodes);
	fputs("  " "\"" DOT_MGMT_ID "\"" " [shape=\"note\" style=\"dashed\" color=\"" DOT_MGMT_COLOR "\" fontcolor=\"#525252\"", f);
	dot_attr(f, "label", label);
	fputs("]\n", f);
	if (ctl >= 0) {
		fputs("  ", f);
		dot_str(f, t->nodes[ctl].name);
		fputs(" -- \"" DOT_MGMT_ID "\" [style=\"dashed\" color=\"" DOT_MGMT_COLOR "\"]\n", f);
		if (!has_hyp(t)) { /* (a rank of its own would pull the controller out of its hypervisor's box) */
			fputs("  { rank=\"same\"; ", f);
			dot_str(f, t->nodes[ctl].name);
			fputs("; \"" DOT_MGMT_ID "\" }\n", f);
		}
		/* the controller above the root: an invisible edge ranks it there */
		fputs("  ", f);
		dot_str(f, t->nodes[ctl].name);
		fputs(" -- ", f);
		dot_str(f, t->nodes[t->root].name);
		fputs(" [style=\"invis\"]\n", f);
	}
	for (int l = 0; l < t->nlinks; l++) {
		const struct topo_link *k = &t->links[l];
		int up = t->nodes[k->node[1]].parent == k->node[0] ? 0 : 1; /* the parent's end */
		fputs("  ", f);
		dot_str(f, t->nodes[k->node[up]].name);
		fputs(" -- ", f);
		dot_str(f, t->nodes[k->node[!up]].name);
		snprintf(label, sizeof(label), "%s\n%s", cidr(k->addr[up], a), cidr(k->addr[!up], b));
		if (crosses(t, l)) /* drawn in the hypervisors' colour, its tunnel named */
			snprintf(label + strlen(label), sizeof(label) - strlen(label), "\n%s tunnel",
				 !is_ns(t, o, k->node[0]) && !is_ns(t, o, k->node[1]) ? "UDP" : "VXLAN");
		fputs(" [", f);
		if (crosses(t, l))
			fputs("color=\"" DOT_HV_COLOR "\" style=\"bold\" ", f);
		dot_attr(f, "label", label);
		fputs("]\n", f);
	}
	fputs("}\n", f);
}

/* inventory.tsv and links.tsv for the lab scripts (and wires.tsv in netns mode). */
static void gen_tables(const struct topology *t, const struct opts *o)
{
	FILE *f = out_open(o->out, "inventory.tsv");
	char a[24], b[16];

	if (f) {
		/* kind: vm (domain: the libvirt domain) or netns (domain: the namespace) */
		/* with hypervisors a last column: the node's */
		fprintf(f, "# node\trole\trank\tmgmt\tdata_if\tdata_addr\tparent\tmemory_mib\tvcpus\tdomain\tkind%s\n",
			has_hyp(t) ? "\thypervisor" : "");
		for (int i = 0; i < t->nnodes; i++) {
			const struct topo_node *n = &t->nodes[i];
			fprintf(f, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%d\t%d\t%s-%s\t%s", n->name, topo_role_name(n->role), n->rank,
				topo_ntoa(n->mgmt, b), n->nl3ifs ? n->l3ifs[0].ifname : "-",
				n->nl3ifs ? cidr(n->l3ifs[0].addr, a) : "-", n->parent >= 0 ? t->nodes[n->parent].name : "-",
				n->memory_mib, n->vcpus, o->prefix, n->name, is_ns(t, o, i) ? "netns" : "vm");
			if (has_hyp(t))
				fprintf(f, "\t%s", hyp_of(t, i)->name);
			fputc('\n', f);
		}
		out_close(f);
	}
	if ((f = out_open(o->out, "links.tsv"))) {
		/* port_a/port_b: the loopback UDP tunnel ports; "-" for a link that
		 * is a veth or a bridge (netns mode, wires.tsv) */
		/* with hypervisors: each end's hypervisor; a crossing link's tunnel ends are in tunnels.tsv */
		fprintf(f, "# link\tnode_a\tif_a\tport_a\tnode_b\tif_b\tport_b\tsubnet%s\n",
			has_hyp(t) ? "\thypervisor_a\thypervisor_b" : "");
		for (int l = 0; l < t->nlinks; l++) {
			const struct topo_link *k = &t->links[l];
			struct topo_cidr net = { k->addr[0].addr & topo_mask(k->addr[0].prefix), k->addr[0].prefix };
			char pa[12] = "-", pb[12] = "-";
			if (!is_ns(t, o, k->node[0]) && !is_ns(t, o, k->node[1])) {
				snprintf(pa, sizeof(pa), "%d", udp_port(o, l, 0));
				snprintf(pb, sizeof(pb), "%d", udp_port(o, l, 1));
			}
			fprintf(f, "%d\t%s\tto-%s\t%s\t%s\tto-%s\t%s\t%s", l, t->nodes[k->node[0]].name, t->nodes[k->node[1]].name,
				pa, t->nodes[k->node[1]].name, t->nodes[k->node[0]].name, pb, cidr(net, a));
			if (has_hyp(t))
				fprintf(f, "\t%s\t%s", hyp_of(t, k->node[0])->name, hyp_of(t, k->node[1])->name);
			fputc('\n', f);
		}
		out_close(f);
	}
	if (o->netns)
		gen_wires(t, o);
	if (has_hyp(t)) {
		gen_tunnels(t, o);
		gen_hypervisors(t, o);
	}
	if ((f = out_open(o->out, "lab.json"))) {
		if (print_json(f, t, o) < 0)
			failed = 1;
		out_close(f);
	}
	if ((f = out_open(o->out, "topology.dot"))) {
		print_dot(f, t, o);
		out_close(f);
	}
}

/*
 * path_ok() - whether @s is a path topogen may write unquoted: 1..@max
 * characters, not starting with '-' and without "--" (not allowed in an XML
 * comment). A path written into XML attributes and text and into YAML
 * values (@absolute: the state and image directories) is A-Z a-z 0-9 . _ / + -
 * and starts with '/'; one written into comments only (the topology file's:
 * XML, YAML and shell comments) may hold any printable ASCII character, but
 * no line break or other control character that would end the comment.
 */
static int path_ok(const char *s, size_t max, int absolute)
{
	size_t len = strlen(s);

	if (len < 1 || len > max || (absolute && s[0] != '/') || s[0] == '-' || strstr(s, "--"))
		return 0;
	if (absolute)
		return strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._/+-") == len;
	for (size_t i = 0; i < len; i++)
		if (s[i] < 0x20 || s[i] > 0x7e)
			return 0;
	return 1;
}

/* The options, on @f. */
static void usage(FILE *f)
{
	fprintf(f,
		"usage: topogen [options] TOPOLOGY.yaml\n"
		"  --check               validate the file only (errors as FILE:LINE: message)\n"
		"  -o, --out DIR         write the lab files into DIR\n"
		"  --json                print the lab's static facts as JSON (OUT/lab.json) on stdout, write nothing\n"
		"  --dot                 print the topology as a graphviz graph (OUT/topology.dot) on stdout, write nothing\n"
		"  --prefix NAME         prefix of libvirt names (default inclab)\n"
		"  --state-dir DIR       where the lab keeps disks, seeds, console logs (default /var/lib/inclab/lab)\n"
		"  --image ROLE=DIR      image directory (vmlinuz, initrd.img) of a role (default /var/cache/inclab/images/ROLE)\n"
		"  --accel kvm|tcg       libvirt domain type (default tcg)\n"
		"  --accel-at NAME=kvm|tcg  the domain type of hypervisor NAME's VMs (default --accel's)\n"
		"  --udp-base PORT       first loopback UDP port for tree links (default 47000; two per link)\n"
		"  --test-lab            a test lab: switches allow fault injection (incswitch -F " FAULT_FILE ")\n"
		"  --switches vm|netns   switches and the controller as VMs (default) or network namespaces\n"
		"  --tsc-khz KHZ         this machine's TSC rate (lab/tsckhz.c), given to TCG guests' kernels\n"
		"  --tsc-khz-at NAME=KHZ the TSC rate of hypervisor NAME's machine, for its TCG guests (default --tsc-khz)\n"
		"  --keys DIR            every node's key DIR/NODE.key (made when missing, mode 0600), each given to its\n"
		"                        node alone (" CTL_NODE_KEY_FILE "), the table of all to the controller\n"
		"                        (" CTL_KEY_TABLE_FILE "); output files mode 0600\n");
}

/* Fill @o from the command line; -1 (message printed) on a bad option or value. */
static int parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "check", no_argument, 0, 'c' },     { "out", required_argument, 0, 'o' },
		{ "prefix", required_argument, 0, 'p' }, { "state-dir", required_argument, 0, 's' },
		{ "image", required_argument, 0, 'i' }, { "accel", required_argument, 0, 'a' },
		{ "udp-base", required_argument, 0, 'u' }, { "help", no_argument, 0, 'h' },
		{ "test-lab", no_argument, 0, 't' },    { "switches", required_argument, 0, 'w' },
		{ "tsc-khz", required_argument, 0, 'k' }, { "keys", required_argument, 0, 'K' },
		{ "json", no_argument, 0, 'J' },          { "dot", no_argument, 0, 'D' },
		{ "tsc-khz-at", required_argument, 0, 'T' }, { "accel-at", required_argument, 0, 'A' },
		{ 0, 0, 0, 0 },
	};
	static char defimg[3][64];
	int c;

	*o = (struct opts){ .prefix = "inclab", .state_dir = "/var/lib/inclab/lab", .accel = "tcg", .udp_base = 47000 };
	for (int r = 0; r < 3; r++) {
		snprintf(defimg[r], sizeof(defimg[r]), "/var/cache/inclab/images/%s", topo_role_name(r));
		o->image[r] = defimg[r];
	}
	while ((c = getopt_long(argc, argv, "o:h", lo, NULL)) != -1) {
		switch (c) {
		case 'c': o->check_only = 1; break;
		case 'J':
		case 'D':
			if (o->print && o->print != c) {
				fprintf(stderr, "topogen: --json and --dot print one view each: give one\n");
				return -1;
			}
			o->print = c;
			break;
		case 't': o->test_lab = 1; break;
		case 'w':
			if (strcmp(optarg, "vm") && strcmp(optarg, "netns")) {
				fprintf(stderr, "topogen: --switches must be vm or netns, not '%s'\n", optarg);
				return -1;
			}
			o->netns = strcmp(optarg, "netns") == 0;
			break;
		case 'o': o->out = optarg; break;
		case 'K': o->keys = optarg; break;
		case 'p': o->prefix = optarg; break;
		case 's': o->state_dir = optarg; break;
		case 'a':
			if (strcmp(optarg, "kvm") && strcmp(optarg, "tcg")) {
				fprintf(stderr, "topogen: --accel must be kvm or tcg, not '%s'\n", optarg);
				return -1;
			}
			o->accel = optarg;
			break;
		case 'k': {
			char *end;
			long v = strtol(optarg, &end, 10);
			/* 100 MHz .. 100 GHz: a number that is not a TSC rate is a mistake */
			if (!*optarg || *end || v < 100000 || v > 100000000) {
				fprintf(stderr, "topogen: --tsc-khz must be a rate in kHz, 100000..100000000, not '%s'\n", optarg);
				return -1;
			}
			o->tsc_khz = v;
			break;
		}
		case 'T': { /* NAME=KHZ: the name is checked against the topology's hypervisors once it is read */
			char *eq = strchr(optarg, '='), *end;
			long v = eq ? strtol(eq + 1, &end, 10) : 0;
			if (!eq || eq == optarg || !eq[1] || *end || v < 100000 || v > 100000000) {
				fprintf(stderr, "topogen: --tsc-khz-at wants NAME=KHZ, a hypervisor's name and a rate in kHz, "
						"100000..100000000, not '%s'\n", optarg);
				return -1;
			}
			if (o->ntsc_at == TOPO_MAX_HYPERVISORS) {
				fprintf(stderr, "topogen: at most %d --tsc-khz-at\n", TOPO_MAX_HYPERVISORS);
				return -1;
			}
			*eq = 0;
			o->tsc_at_name[o->ntsc_at] = optarg;
			o->tsc_at_khz[o->ntsc_at++] = v;
			break;
		}
		case 'A': { /* NAME=kvm|tcg: the name is checked against the topology's hypervisors once it is read */
			char *eq = strchr(optarg, '=');
			if (!eq || eq == optarg || (strcmp(eq + 1, "kvm") && strcmp(eq + 1, "tcg"))) {
				fprintf(stderr, "topogen: --accel-at wants NAME=kvm or NAME=tcg, a hypervisor's name and its "
						"accelerator, not '%s'\n", optarg);
				return -1;
			}
			if (o->naccel_at == TOPO_MAX_HYPERVISORS) {
				fprintf(stderr, "topogen: at most %d --accel-at\n", TOPO_MAX_HYPERVISORS);
				return -1;
			}
			*eq = 0;
			o->accel_at_name[o->naccel_at] = optarg;
			o->accel_at[o->naccel_at++] = eq + 1;
			break;
		}
		case 'u': {
			char *end;
			long v = strtol(optarg, &end, 10);
			if (*end || v < 1024 || v > 65535 - 2 * TOPO_MAX_LINKS) {
				fprintf(stderr, "topogen: --udp-base must be a port in 1024..%d\n", 65535 - 2 * TOPO_MAX_LINKS);
				return -1;
			}
			o->udp_base = (int)v;
			break;
		}
		case 'i': {
			char *eq = strchr(optarg, '=');
			int r;
			for (r = 0; r < 3 && eq; r++)
				if ((size_t)(eq - optarg) == strlen(topo_role_name(r)) &&
				    strncmp(optarg, topo_role_name(r), (size_t)(eq - optarg)) == 0)
					break;
			if (!eq || r == 3) {
				fprintf(stderr, "topogen: --image wants ROLE=DIR with ROLE controller, switch or host: '%s'\n", optarg);
				return -1;
			}
			o->image[r] = eq + 1;
			break;
		}
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); return -1;
		}
	}
	if (optind != argc - 1 || (!o->out && !o->check_only && !o->print)) {
		usage(stderr);
		return -1;
	}
	if (o->print && (o->out || o->check_only)) {
		fprintf(stderr, "topogen: --%s prints on stdout: no -o or --check with it\n", o->print == 'J' ? "json" : "dot");
		return -1;
	}
	/* What is written unquoted into the generated XML, YAML and shell
	 * files must be words and paths of a strict grammar (topo.c checks the
	 * topology's own names). The lab's prefix: libvirt names, device names,
	 * cloud-init's instance-id. */
	if (!topo_word_ok(o->prefix, 32, 1)) {
		fprintf(stderr, "topogen: --prefix must be 1..32 characters of a-z, 0-9 and single '-' between them, "
				"starting with a letter, not '%s'\n", o->prefix);
		return -1;
	}
	if (!o->check_only && !o->print) {
		const char *const what[] = { "--state-dir", "--image controller=", "--image switch=", "--image host=" };
		const char *const val[] = { o->state_dir, o->image[0], o->image[1], o->image[2] };
		for (int i = 0; i < 4; i++)
			if (!path_ok(val[i], 200, 1)) {
				fprintf(stderr, "topogen: %s must be an absolute path of at most 200 characters of "
						"A-Z a-z 0-9 . _ / + - without '--' (it is written into XML and YAML), not '%s'\n",
					what[i], val[i]);
				return -1;
			}
	}
	/* the lab files write the path into comments; --json and --dot quote it
	 * (a JSON or DOT string), and it is one line of printable text there too */
	if ((!o->check_only || o->print) && !path_ok(argv[optind], 200, 0)) {
		fprintf(stderr, "topogen: the topology file's path must be at most 200 printable ASCII characters, "
				"not starting with '-' and without '--' (it is written into XML, YAML and shell comments), not '%s'\n",
			argv[optind]);
		return -1;
	}
	dev_tag(o);
	return 0;
}

/* --check with hypervisors: where each node runs, and why (placed by the
 * file, or by the balance), a line per hypervisor, and the crossing links. */
static void print_placement(FILE *f, const struct topology *t)
{
	char a[16];
	int ncross = 0;

	for (int h = 0; h < t->nhypervisors; h++) {
		const struct topo_hypervisor *x = &t->hypervisors[h];
		fprintf(f, "  hypervisor %s (%s, tunnels to %s): %d nodes, %d MiB:", x->name, x->uri, topo_ntoa(x->addr, a),
			x->nnodes, x->memory_mib);
		for (int i = 0; i < t->nnodes; i++)
			if (t->nodes[i].hypervisor == h)
				fprintf(f, " %s%s", t->nodes[i].name, t->nodes[i].placed ? "" : "*");
		fputc('\n', f);
	}
	for (int l = 0; l < t->nlinks; l++)
		if (crosses(t, l)) {
			fprintf(f, "%s%s-%s", ncross ? ", " : "  links between hypervisors: ", t->nodes[t->links[l].node[0]].name,
				t->nodes[t->links[l].node[1]].name);
			ncross++;
		}
	if (t->nhypervisors)
		fprintf(f, "%s(* placed by the balance)\n", ncross ? "\n  " : "  links between hypervisors: none\n  ");
}

/* resolve_at() - each NAME of @names (@n of them, given with --@opt) to the index of
 * hypervisor NAME of @t in @hyp; -1 (message printed) for a name the topology does not
 * declare or one given twice. */
static int resolve_at(const struct topology *t, const char *opt, const char *const *names, int n, int *hyp)
{
	for (int k = 0; k < n; k++) {
		int h = 0;
		while (h < t->nhypervisors && strcmp(t->hypervisors[h].name, names[k]))
			h++;
		if (h == t->nhypervisors) {
			fprintf(stderr, "topogen: --%s %s: %s declares no hypervisor '%s'\n", opt, names[k], t->file, names[k]);
			return -1;
		}
		for (int j = 0; j < k; j++)
			if (hyp[j] == h) {
				fprintf(stderr, "topogen: --%s %s given twice\n", opt, names[k]);
				return -1;
			}
		hyp[k] = h;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o;
	struct topology *t;
	char dir[1024];

	if (parse_opts(argc, argv, &o) < 0)
		return 2;
	if (!(t = topo_load(argv[optind], stderr)))
		return 1;
	if (resolve_at(t, "tsc-khz-at", o.tsc_at_name, o.ntsc_at, o.tsc_at_hyp) < 0 ||
	    resolve_at(t, "accel-at", o.accel_at_name, o.naccel_at, o.accel_at_hyp) < 0) {
		topo_free(t);
		return 2;
	}
	if (o.check_only) {
		printf("%s: topology '%s' is valid: %d nodes (%d hosts), %d links, %d segments\n", t->file, t->name,
		       t->nnodes, t->nhosts, t->nlinks, t->nsegments);
		print_placement(stdout, t);
		topo_free(t);
		return 0;
	}
	if (o.print) {
		int rc = 0;
		if (o.print == 'J')
			rc = print_json(stdout, t, &o);
		else
			print_dot(stdout, t, &o);
		topo_free(t);
		if (fflush(stdout) == EOF || ferror(stdout)) {
			fprintf(stderr, "topogen: write error: %s\n", strerror(errno));
			return 1;
		}
		return rc < 0;
	}
	/* the management tunnels' ports follow the links' in the lab's range (mgmt_port()) */
	if (t->nlinks + (t->nhypervisors ? t->nhypervisors - 1 : 0) > TOPO_MAX_LINKS) {
		fprintf(stderr, "topogen: %d links and %d hypervisors need more than the %d UDP ports from --udp-base\n",
			t->nlinks, t->nhypervisors, 2 * TOPO_MAX_LINKS);
		topo_free(t);
		return 1;
	}
	if (o.keys && (ctl_auth_init() < 0 || load_keys(t, o.keys) < 0)) {
		topo_free(t);
		return 1;
	}
	snprintf(dir, sizeof(dir), "%s/domains", o.out);
	if (mkdir_p(dir) < 0) {
		fprintf(stderr, "topogen: cannot create %s: %s\n", dir, strerror(errno));
		topo_free(t);
		return 1;
	}
	gen_network(t, &o, -1);
	for (int h = 0; h < t->nhypervisors; h++) {
		snprintf(dir, sizeof(dir), "%s/hv/%s", o.out, t->hypervisors[h].name);
		if (mkdir_p(dir) < 0) {
			fprintf(stderr, "topogen: cannot create %s: %s\n", dir, strerror(errno));
			topo_free(t);
			return 1;
		}
		gen_network(t, &o, h);
	}
	for (int i = 0; i < t->nnodes; i++) {
		if (is_ns(t, &o, i)) {
			gen_ns_node(t, &o, i);
			continue;
		}
		gen_domain(t, &o, i);
		gen_seed(t, &o, i);
	}
	gen_tables(t, &o);
	topo_free(t);
	return failed;
}
