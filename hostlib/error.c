/*
 * error.c — why the last create/init call of this thread failed
 * (inccl_last_error(), inccl.h); every layer of libinccl records it here.
 */
#include <stdarg.h>
#include <stdio.h>

#include "inccl.h"
#include "internal.h"

static _Thread_local char last_error[512];

void inccl__set_last_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
}

const char *inccl_last_error(void)
{
	return last_error;
}
