/* SPDX-License-Identifier: MIT */
/* config_file.c - the --config file: JSON (jansson) to a list of --port specs; pure parser. */
#include "config/config_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "lib/err_msg.h"

/* append() - add text to spec (len so far in *used); false if it does not fit. */
static bool append(char *spec, size_t *used, const char *text)
{
	size_t n = strlen(text);

	if (*used + n + 1 > CONFIG_SPEC_MAX)
		return false;
	memcpy(spec + *used, text, n + 1);
	*used += n;
	return true;
}

/* Keys whose "on" form is the bare key and whose "off" form is its absence. */
static bool bare_key(const char *key)
{
	return strcmp(key, "switch") == 0 || strcmp(key, "client") == 0;
}

/* object_spec() - {"key": value, ...} into "key=value,..."; 0 or -1 (err). */
static int object_spec(json_t *obj, unsigned i, char *spec, char *err, size_t err_len)
{
	const char *key;
	json_t *v;
	size_t used = 0;
	char num[24];
	bool first = true;

	spec[0] = '\0';
	json_object_foreach(obj, key, v) {
		const char *value = NULL;

		if (key[0] == '\0' || strpbrk(key, ",="))
			return err_msg(err, err_len, "port %u: bad key '%.64s'", i, key);
		if (json_is_string(v)) {
			value = json_string_value(v);
			if (strchr(value, ',') || strlen(value) != json_string_length(v))
				return err_msg(err, err_len, "port %u: value of '%.64s' has a "
					       "comma or NUL", i, key);
		} else if (json_is_integer(v) && json_integer_value(v) >= 0) {
			snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
			value = num;
		} else if (json_is_boolean(v)) {
			if (bare_key(key) && json_is_false(v))
				continue;
			value = bare_key(key) ? NULL : json_is_true(v) ? "on" : "off";
		} else {
			return err_msg(err, err_len, "port %u: '%.64s' must be a string, a number "
				       ">= 0 or a boolean", i, key);
		}
		if ((!first && !append(spec, &used, ",")) || !append(spec, &used, key) ||
		    (value && (!append(spec, &used, "=") || !append(spec, &used, value))))
			return err_msg(err, err_len, "port %u: longer than %d bytes", i,
				       CONFIG_SPEC_MAX - 1);
		first = false;
	}
	if (first)
		return err_msg(err, err_len, "port %u: no keys", i);
	return 0;
}

/**
 * config_file_parse() - a --config file's text into the port specs it lists.
 * @text: the text, text[0..len) (hostile: any bytes, need not be NUL-terminated)
 * @len: its length
 * @out: the specs, each as --port takes it (out->n 0 on failure)
 * @err: one line on failure
 * @err_len: its size
 *
 * Only the spec syntax is built here; port_spec_runtime() checks the keys. Any thread.
 *
 * Return: 0, or -1 (err set).
 */
int config_file_parse(const char *text, size_t len, struct config_ports *out, char *err,
		      size_t err_len)
{
	json_error_t jerr;
	json_t *root, *ports, *v;
	const char *key;
	size_t i;
	int r = 0;

	out->n = 0;
	err[0] = '\0';
	root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return err_msg(err, err_len, "line %d column %d: %s", jerr.line, jerr.column,
			       jerr.text);
	if (!json_is_object(root)) {
		json_decref(root);
		return err_msg(err, err_len, "the file must hold a JSON object");
	}
	json_object_foreach(root, key, v)
		if (strcmp(key, "ports") != 0) {
			r = err_msg(err, err_len, "unknown key '%.64s' (only \"ports\")", key);
			goto out;
		}
	ports = json_object_get(root, "ports");
	if (!json_is_array(ports)) {
		r = err_msg(err, err_len, "\"ports\" must be an array");
		goto out;
	}
	if (json_array_size(ports) > VNETD_MAX_PORTS) {
		r = err_msg(err, err_len, "more than %d ports", VNETD_MAX_PORTS);
		goto out;
	}
	json_array_foreach(ports, i, v) {
		char *spec = out->spec[i];

		if (json_is_string(v)) {
			if (json_string_length(v) >= CONFIG_SPEC_MAX ||
			    strlen(json_string_value(v)) != json_string_length(v)) {
				r = err_msg(err, err_len, "port %zu: longer than %d bytes or has a "
					    "NUL", i, CONFIG_SPEC_MAX - 1);
				goto out;
			}
			memcpy(spec, json_string_value(v), json_string_length(v) + 1);
		} else if (json_is_object(v)) {
			if ((r = object_spec(v, (unsigned)i, spec, err, err_len)) < 0)
				goto out;
		} else {
			r = err_msg(err, err_len, "port %zu: must be a spec string or an object",
				    i);
			goto out;
		}
		out->n = (unsigned)i + 1;
	}
out:
	if (r < 0)
		out->n = 0;
	json_decref(root);
	return r;
}

/**
 * config_file_load() - read a --config file and parse it (config_file_parse()).
 * @dirfd: the directory the file is in
 * @path: the file's name in it
 * @out: the specs
 * @err: one line on failure
 * @err_len: its size
 *
 * Opened with CONFIG_OPEN_FLAGS (never waits for a FIFO); anything but a regular file of at
 * most CONFIG_FILE_MAX bytes is refused.
 *
 * Return: 0, or -1 (err set).
 */
int config_file_load(int dirfd, const char *path, struct config_ports *out, char *err,
		     size_t err_len)
{
	char *buf = malloc(CONFIG_FILE_MAX + 1);
	size_t len = 0;
	struct stat st;
	ssize_t n;
	int fd, r;

	if (!buf)
		return err_msg(err, err_len, "out of memory");
	fd = openat(dirfd, path, CONFIG_OPEN_FLAGS);
	if (fd < 0) {
		free(buf);
		return err_msg(err, err_len, "%s: %s", path, strerror(errno));
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		free(buf);
		return err_msg(err, err_len, "%s: not a regular file", path);
	}
	while ((n = read(fd, buf + len, CONFIG_FILE_MAX + 1 - len)) > 0 && len <= CONFIG_FILE_MAX)
		len += (size_t)n;
	close(fd);
	if (n < 0 || len > CONFIG_FILE_MAX) {
		free(buf);
		return err_msg(err, err_len, "%s: %s", path,
			       n < 0 ? strerror(errno) : "larger than 1 MiB");
	}
	r = config_file_parse(buf, len, out, err, err_len);
	free(buf);
	return r;
}
