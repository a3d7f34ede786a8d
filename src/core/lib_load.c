/* lib_load.c - see lib_load.h. */
#include "lib_load.h"

#include <dlfcn.h>
#include <stdio.h>

int lib_load(const char *soname, const char *package,
             const char *const *names, void **const *slots, size_t n,
             char *err, size_t errlen)
{
  void *lib = dlopen(soname, RTLD_NOW | RTLD_LOCAL);

  if (!lib) {
    snprintf(err, errlen, "cannot load %s (Debian's %s): %s", soname, package,
             dlerror());
    return -1;
  }
  /* dlsym gives an object pointer; POSIX lets it hold a function's. */
  for (size_t i = 0; i < n; i++)
    if (!(*slots[i] = dlsym(lib, names[i]))) {
      snprintf(err, errlen, "%s has no %s", soname, names[i]);
      return -1;
    }
  return 0;
}
