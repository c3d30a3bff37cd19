/* Finding a tokenizer by model name, offline, in the Hugging Face cache.
 *
 * `--tokenizer meta-llama/Llama-3.1-8B-Instruct` should work on a machine
 * where the model (or only its tokenizer files) was fetched with the
 * huggingface_hub library or its CLI, without tokperf ever going online.
 * The lookup follows huggingface_hub's cache layout:
 *
 *   cache dir     $HF_HUB_CACHE, else $HUGGINGFACE_HUB_CACHE (its old name),
 *                 else $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub,
 *                 else ~/.cache/huggingface/hub
 *   repository    <cache>/models--ORG--NAME
 *   revision      <repo>/refs/<REV> holds a commit hash (REV default main);
 *                 a REV that is itself a 40-hex commit hash is used as is
 *   files         <repo>/snapshots/<hash>/tokenizer.json (or .model)
 *
 * A name that exists as a local path always wins, as in transformers.
 * The environment is read through an injected getter, so the path logic is
 * tested with tables of environments and a fake cache in a temporary
 * folder. */
#ifndef TP_TOK_FIND_H
#define TP_TOK_FIND_H

#include <stdbool.h>
#include <stddef.h>

#include "util/tp_common.h"

/* Returns the value of the environment variable name, or NULL. */
typedef const char *(*tp_tok_env_fn)(void *ud, const char *name);

/* The process environment (getenv), for tp_tok_env_fn. */
const char *tp_tok_env_process(void *ud, const char *name);

/* Whether name has the shape of a Hugging Face repository id ORG/NAME:
 * exactly one '/', both parts of letters, digits, '-', '_' and '.', not
 * starting or ending with '-' or '.', no "--" or "..", at most 96 bytes
 * (huggingface_hub's own rules).  Bare names ("gpt2") are not looked up,
 * so a mistyped file name is never mistaken for a model. */
bool tp_tok_is_repo_id(const char *name);

/* Appends the hub cache directory to out (no trailing '/') and sets *from
 * to a description of where it came from ("HF_HUB_CACHE", "HF_HOME", ...).
 * Returns 0, TP_ENOMEM, or TP_ENOTFOUND when not even HOME is set. */
int tp_tok_hub_cache_dir(tp_tok_env_fn env, void *ud, tp_buf *out, const char **from);

/* Resolves a --tokenizer value: an existing local path is returned as it
 * is; a repository id is looked up in the cache at revision (NULL or ""
 * for main) and the snapshot directory holding tokenizer.json or
 * tokenizer.model is returned.  *path is owned (free()).  Returns 0,
 * TP_ENOMEM, or TP_ENOTFOUND with a message that names every place looked
 * at and the command that fetches the files. */
int tp_tok_find(const char *name, const char *revision, tp_tok_env_fn env, void *ud, char **path, char *err,
                size_t errlen);

#endif
