# Snapshots of an R context (the R kernel's state-save and state-load): its
# state written to a file, read by a fresh kernel. Sourced by sandcell_r_kernel.R
# into the kernel's environment.

# The file: a line `sandcell-r-state 1`, then two serializations: the header
# (plain data: the names in the file, those left out and why, the attached
# packages, the working directory, the execution count), then the user's
# objects as one list, so what two names share (an environment) stays shared.
# Packages are attached again before the objects, which may need their namespaces.
STATE_MAGIC <- charToRaw("sandcell-r-state 1\n")
STATE_FIELDS <- c("objects", "skipped", "packages", "directory", "executionCount")
initial_search <- search() # the packages the user attaches are those beyond these
state_error <- function(code, message) list(error = list(code = code, message = message))
skip <- function(name, reason) list(name = name, reason = reason)
# file() says why it cannot open in a warning, then fails with "cannot open the connection".
open_file <- function(path, mode) {
  withCallingHandlers(file(path, mode), warning = function(condition) stop(conditionMessage(condition), call. = FALSE))
}
# What serializes but means nothing once read back: the process's connections and pointers.
unsaveable <- function(value) {
  if (inherits(value, "connection")) "connection" else if (typeof(value) == "externalptr") "external pointer" else NULL
}
write_state <- function(path, header, objects) {
  mask <- Sys.umask("077")
  out <- tryCatch(open_file(path, "wb"), finally = Sys.umask(mask))
  written <- FALSE
  on.exit({
    close(out)
    if (!written) unlink(path) # no half-written state left behind
  })
  Sys.chmod(path, "600") # a file that existed keeps its mode when truncated
  writeBin(STATE_MAGIC, out)
  serialize(header, out)
  serialize(objects, out)
  written <- TRUE
}
save_state <- function(path) {
  objects <- mget(ls(globalenv(), all.names = TRUE), envir = globalenv())
  skipped <- list()
  for (name in names(objects)) {
    reason <- unsaveable(objects[[name]])
    if (!is.null(reason)) skipped[[length(skipped) + 1L]] <- skip(name, reason)
  }
  objects <- objects[setdiff(names(objects), vapply(skipped, `[[`, "", "name"))]
  packages <- sub("^package:", "", setdiff(grep("^package:", search(), value = TRUE), initial_search))
  header <- function() {
    list(objects = as.character(names(objects)), skipped = skipped, packages = packages, directory = getwd(), executionCount = execution_count)
  }
  failure <- tryCatch(write_state(path, header(), objects), error = function(condition) condition)
  if (inherits(failure, "error")) {
    # One object that cannot be serialized costs only itself: found alone, the rest written together again.
    for (name in names(objects)) {
      problem <- tryCatch({
        serialize(objects[[name]], NULL)
        NULL
      }, error = conditionMessage)
      if (is.null(problem)) next
      skipped[[length(skipped) + 1L]] <- skip(name, problem)
      objects[[name]] <- NULL
    }
    write_state(path, header(), objects)
  }
  saved <- c(sprintf("package:%s", packages), names(objects)) # paste0 would give "package:" for none
  list(saved = as.list(saved), skipped = skipped, executionCount = execution_count)
}
is_state_header <- function(header) {
  is.list(header) && all(STATE_FIELDS %in% names(header)) && is.character(header$objects) &&
    is.list(header$skipped) && is.character(header$packages) && is.character(header$directory) &&
    length(header$directory) == 1L && is.numeric(header$executionCount) && length(header$executionCount) == 1L
}
load_state <- function(path) {
  source <- open_file(path, "rb")
  on.exit(close(source))
  # Nothing is unserialized from a file that does not start as a state does.
  if (!identical(readBin(source, "raw", length(STATE_MAGIC)), STATE_MAGIC)) return(state_error("state-invalid", "not a sandcell R state file"))
  header <- tryCatch(unserialize(source), error = function(condition) NULL)
  if (!is_state_header(header)) return(state_error("state-invalid", "the R state file's header is damaged"))
  restored <- character(0)
  skipped <- header$skipped
  for (package in rev(header$packages)) { # search() lists the last attached first
    problem <- tryCatch({
      suppressWarnings(suppressMessages(library(package, character.only = TRUE)))
      NULL
    }, error = conditionMessage)
    name <- paste0("package:", package)
    if (is.null(problem)) restored <- c(restored, name) else skipped[[length(skipped) + 1L]] <- skip(name, paste("the package could not be attached:", problem))
  }
  objects <- tryCatch(unserialize(source), error = function(condition) condition)
  if (inherits(objects, "error")) {
    reason <- paste("could not be read back:", conditionMessage(objects))
    skipped <- c(skipped, lapply(header$objects, skip, reason))
  } else {
    list2env(objects, globalenv())
    restored <- c(restored, names(objects))
  }
  problem <- tryCatch({
    setwd(header$directory)
    NULL
  }, error = function(condition) if (dir.exists(header$directory)) conditionMessage(condition) else "no such directory")
  if (!is.null(problem)) skipped[[length(skipped) + 1L]] <- skip("(working directory)", paste0(header$directory, ": ", problem))
  execution_count <<- as.integer(header$executionCount)
  list(restored = as.list(restored), skipped = skipped, executionCount = execution_count)
}
