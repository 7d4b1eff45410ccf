/* plugin_abi.h — the versioned C ABI through which a shared library adds re-rank scorers to a
 * plumb::Registry at run time (Registry::load_library). Plain C: a plugin needs no plumb headers
 * beyond this one and no C++ ABI compatibility with the host.
 *
 * A plugin library exports one function, PLUMB_PLUGIN_ENTRY_SYMBOL:
 *
 *     const plumb_plugin_info* plumb_plugin_entry(void);
 *
 * returning a static plumb_plugin_info whose abi_version must equal the host's
 * PLUMB_PLUGIN_ABI_VERSION (otherwise loading fails with a ConfigError naming the library).
 * The host then calls info->register_scorers(api) once; the plugin calls
 * api->register_scorer(api->host, ...) for each scorer type it provides. A scorer type becomes a
 * re-rank stage type of the registry: a stage configuration {"type": "<name>", "depth": N,
 * "name": "...", "config": {...}} creates one instance with create(config JSON text) (NULL create:
 * instance NULL), scores batches with score() and frees the instance with destroy() (may be NULL).
 *
 * score(instance, query, passages, n, out) writes n floats (higher = more relevant) and returns 0
 * on success, non-zero on failure. It may be called concurrently from several threads on one
 * instance. Strings are NUL-terminated UTF-8 and valid only during the call.
 */
#ifndef PLUMB_PLUGIN_ABI_H
#define PLUMB_PLUGIN_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PLUMB_PLUGIN_ABI_VERSION 1u
#define PLUMB_PLUGIN_ENTRY_SYMBOL "plumb_plugin_entry"

typedef void* (*plumb_scorer_create_fn)(const char* config_json);
typedef int (*plumb_scorer_score_fn)(void* instance, const char* query,
                                     const char* const* passages, size_t n, float* out);
typedef void (*plumb_scorer_destroy_fn)(void* instance);

typedef struct plumb_host_api {
    uint32_t abi_version; /* PLUMB_PLUGIN_ABI_VERSION of the host */
    void* host;           /* opaque; pass back to register_scorer */
    /* Returns 0 on success, non-zero when the name is empty or already registered. */
    int (*register_scorer)(void* host, const char* name, plumb_scorer_create_fn create,
                           plumb_scorer_score_fn score, plumb_scorer_destroy_fn destroy);
} plumb_host_api;

typedef struct plumb_plugin_info {
    uint32_t abi_version; /* must be PLUMB_PLUGIN_ABI_VERSION */
    const char* name;     /* the plugin's name, for messages */
    /* Registers the plugin's scorers; returns 0 on success. */
    int (*register_scorers)(const plumb_host_api* api);
} plumb_plugin_info;

typedef const plumb_plugin_info* (*plumb_plugin_entry_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* PLUMB_PLUGIN_ABI_H */
