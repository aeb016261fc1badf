/*
 * Moved to profile/maptab.h (profile stage: it builds profile mappings and
 * symbolizes nothing).  This header stays only for src/agent/agent.h and
 * src/agent/modules.c, which include it until agent/ is split (issue 25
 * item 1); new code includes "profile/maptab.h".
 */
#ifndef KILN_SYMBOLIZE_MAPTAB_H
#define KILN_SYMBOLIZE_MAPTAB_H

#include "profile/maptab.h"

#endif
