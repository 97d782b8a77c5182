/*
 * swconfig.h — the switch's rules (children, slots, timers) from YAML.
 */
#ifndef INCLAB_SWCONFIG_H
#define INCLAB_SWCONFIG_H

#include <stdio.h>

#include "engine.h"

#define SW_PORT_NAME_MAX 16

struct sw_rules {
	char name[64];
	unsigned comm;                     /* communicator id given by the controller */
	struct sw_cfg cfg;                 /* child[i].port indexes port[] */
	int nports;
	char port[SW_MAX_CHILDREN][SW_PORT_NAME_MAX];
};

/**
 * sw_rules_parse() - parse a rules document of @len bytes.
 * @name: how to call it in messages ("FILE" or "controller").
 * Return: 0, or -1 after printing each error as "NAME:LINE: message" on @err.
 */
int sw_rules_parse(const char *yaml, size_t len, const char *name, struct sw_rules *r, FILE *err);

#endif
