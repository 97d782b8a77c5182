/*
 * tree.cc — the trees incsim simulates: inclab's topology files (read by
 * topology/topo.c, the lab's own parser) and generated uniform trees named
 * by their shape ("1-32-1024"), which are larger than a lab can hold.
 */
#include "model.h"

extern "C" {
#include "../topology/topo.h"
}

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace incsim {

namespace {

/* Finish() - subtree intervals (DFS from the root), switch levels and the host per rank; false with @err if a host is not a leaf of the tree. */
bool Finish(Tree *t, std::string *err)
{
	int clock = 0;
	std::vector<std::pair<int, size_t>> stack{{t->root, 0}};
	std::vector<int> depth(t->nodes.size(), 0);
	t->nodes[size_t(t->root)].tin = clock++;
	int maxdepth = 0;
	while (!stack.empty()) {
		auto &[u, i] = stack.back();
		TreeNode &n = t->nodes[size_t(u)];
		if (i < n.children.size()) {
			int c = n.children[i++];
			depth[size_t(c)] = depth[size_t(u)] + 1;
			maxdepth = std::max(maxdepth, depth[size_t(c)]);
			t->nodes[size_t(c)].tin = clock++;
			stack.push_back({c, 0});
		} else {
			n.tout = clock;
			stack.pop_back();
		}
	}
	t->levels = 0;
	t->host_of_rank.assign(0, 0);
	int nhosts = 0;
	for (const TreeNode &n : t->nodes)
		nhosts += n.host;
	t->host_of_rank.assign(size_t(nhosts), -1);
	for (size_t i = 0; i < t->nodes.size(); i++) {
		const TreeNode &n = t->nodes[i];
		if (n.host) {
			if (!n.children.empty() || n.parent < 0) {
				*err = "host '" + n.name + "' is not a leaf under a switch";
				return false;
			}
			if (n.rank < 0 || n.rank >= nhosts || t->host_of_rank[size_t(n.rank)] >= 0) {
				*err = "host '" + n.name + "': ranks must be 0..hosts-1, each once";
				return false;
			}
			t->host_of_rank[size_t(n.rank)] = int(i);
			t->levels = std::max(t->levels, depth[i]);
		}
	}
	if (nhosts < 2) {
		*err = "a tree needs at least two hosts";
		return false;
	}
	return true;
}

} // namespace

bool TreeFromShape(const std::string &shape, Tree *t, std::string *err)
{
	std::vector<long> count;
	const char *s = shape.c_str();
	while (*s) {
		if (*s < '1' || *s > '9') {
			*err = "tree shape '" + shape + "': counts per level joined by '-', like 1-32-1024";
			return false;
		}
		char *end;
		errno = 0;
		long v = strtol(s, &end, 10);
		if (errno || v > kMaxHosts || (*end && *end != '-') || (*end == '-' && !end[1])) {
			*err = "tree shape '" + shape + "': counts per level joined by '-', each 1.." + std::to_string(kMaxHosts);
			return false;
		}
		count.push_back(v);
		s = *end ? end + 1 : end;
		if (count.size() > 8) {
			*err = "tree shape '" + shape + "': at most 8 levels";
			return false;
		}
	}
	if (count.size() < 2 || count[0] != 1) {
		*err = "tree shape '" + shape + "': the first level is the one root switch (1-...), hosts the last of at least two";
		return false;
	}
	for (size_t l = 1; l < count.size(); l++)
		if (count[l] % count[l - 1] || count[l] == count[l - 1]) {
			*err = "tree shape '" + shape + "': each level's count must be a multiple (2 or more) of the level above's";
			return false;
		}
	*t = Tree();
	t->name = shape;
	std::vector<int> prev;
	for (size_t l = 0; l < count.size(); l++) {
		bool host = l + 1 == count.size();
		std::vector<int> cur;
		for (long i = 0; i < count[l]; i++) {
			TreeNode n;
			n.host = host;
			n.rank = host ? int(i) : -1;
			n.name = host ? "h" + std::to_string(i) : "s" + std::to_string(l) + "-" + std::to_string(i);
			if (l > 0) {
				n.parent = prev[size_t(i / (count[l] / count[l - 1]))];
				t->nodes[size_t(n.parent)].children.push_back(int(t->nodes.size()));
			}
			cur.push_back(int(t->nodes.size()));
			t->nodes.push_back(n);
		}
		prev.swap(cur);
	}
	t->root = 0;
	return Finish(t, err);
}

bool TreeFromTopology(const char *path, Tree *t, std::string *err)
{
	char *msg = nullptr;
	size_t len = 0;
	FILE *mf = open_memstream(&msg, &len);
	if (!mf) {
		*err = "out of memory";
		return false;
	}
	struct topology *tp = topo_load(path, mf);
	fclose(mf);
	std::unique_ptr<char, decltype(&free)> msg_own(msg, &free);
	if (!tp) {
		*err = len ? std::string(msg, len) : std::string(path) + ": not a topology";
		while (!err->empty() && err->back() == '\n')
			err->pop_back();
		return false;
	}
	*t = Tree();
	t->name = tp->name;
	std::vector<int> idx(size_t(tp->nnodes), -1);
	for (int i = 0; i < tp->nnodes; i++) {
		const struct topo_node &n = tp->nodes[i];
		if (n.role == TOPO_CONTROLLER)
			continue;
		TreeNode tn;
		tn.name = n.name;
		tn.host = n.role == TOPO_HOST;
		tn.rank = tn.host ? n.rank : -1;
		idx[size_t(i)] = int(t->nodes.size());
		t->nodes.push_back(tn);
	}
	for (int i = 0; i < tp->nnodes; i++) {
		int u = idx[size_t(i)], par = tp->nodes[i].parent;
		if (u < 0 || par < 0)
			continue;
		t->nodes[size_t(u)].parent = idx[size_t(par)];
		t->nodes[size_t(idx[size_t(par)])].children.push_back(u);
	}
	t->root = idx[size_t(tp->root)];
	topo_free(tp);
	if (!Finish(t, err)) {
		*err = std::string(path) + ": " + *err;
		return false;
	}
	return true;
}

} // namespace incsim
