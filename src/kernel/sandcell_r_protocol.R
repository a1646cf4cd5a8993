# The R kernel's side of the protocol (v2, an fd 3/4 kernel: requests on fd 3,
# events on fd 4; see docs/kernel-protocol.md): JSON out, the requests and their
# replies, and the loop that reads them. Sourced by sandcell_r_kernel.R into the
# kernel's environment, where its functions and the kernel's see one another.

requests <- file("/dev/fd/3", open = "rb", raw = TRUE)
events <- file("/dev/fd/4", open = "wb", raw = TRUE)

# --- JSON out: by hand, since jsonlite's toJSON costs ~0.25 ms a call -------
json_string <- function(text) {
  text <- as.character(text)
  if (Encoding(text) == "bytes") Encoding(text) <- "unknown" # e.g. what capture.output gives for some packages' output
  text <- enc2utf8(text)
  if (!validUTF8(text)) text <- iconv(text, "UTF-8", "UTF-8", sub = "\ufffd")
  if (grepl("[\001-\037\"\\\\]", text, useBytes = TRUE)) {
    text <- gsub("\\", "\\\\", text, fixed = TRUE)
    text <- gsub("\"", "\\\"", text, fixed = TRUE)
    text <- gsub("\n", "\\n", text, fixed = TRUE)
    text <- gsub("\t", "\\t", text, fixed = TRUE)
    text <- gsub("\r", "\\r", text, fixed = TRUE)
    if (grepl("[\001-\037]", text, useBytes = TRUE)) {
      # Rare: one pass per other control character (regmatches<- with useBytes mangles UTF-8).
      for (code in setdiff(1:31, c(9L, 10L, 13L))) {
        text <- gsub(intToUtf8(code), sprintf("\\u%04x", code), text, fixed = TRUE)
      }
    }
  }
  paste0("\"", text, "\"")
}
# Lists with names are objects, without are arrays; strings, numbers, flags.
to_json <- function(value) {
  if (is.null(value)) return("null")
  if (is.list(value)) {
    parts <- vapply(value, to_json, "")
    if (is.null(names(value))) return(paste0("[", paste(parts, collapse = ","), "]"))
    if (!length(value)) return("{}")
    return(paste0("{", paste0(vapply(names(value), json_string, ""), ":", parts, collapse = ","), "}"))
  }
  if (is.logical(value)) return(if (isTRUE(value)) "true" else "false")
  if (is.numeric(value)) return(as.character(value))
  json_string(value)
}
write_event <- function(line) {
  flush.console() # what the code printed goes out before the event about it
  writeLines(line, events, useBytes = TRUE)
  flush(events)
}
send <- function(message) write_event(to_json(message))
reply <- function(request, ...) send(c(list(type = "reply", id = request$id, ok = TRUE), list(...)))

handle <- function(line) {
  request <- tryCatch(jsonlite::parse_json(line), error = function(condition) NULL)
  if (!is.list(request) || is.null(names(request))) {
    send(list(type = "protocol-error", message = "invalid JSON request"))
    return()
  }
  type <- as.character(request$type %or% "")
  if (type == "execute") {
    tryCatch(execute(request), error = function(condition) {
      # A fault of the kernel itself: the execution still ends, so the host never waits on it.
      failure <- list(name = "KernelError", value = conditionMessage(condition), traceback = list())
      send(c(list(type = "error", id = request$id), failure))
      send(list(type = "execution-end", id = request$id, status = "error", executionCount = execution_count, outputTruncated = FALSE))
    })
  } else if (type == "ping") {
    reply(request)
  } else if (type == "reset") {
    reset()
    reply(request)
  } else if (type == "state-save" || type == "state-load") {
    path <- request$path
    if (!is.character(path) || length(path) != 1L || !startsWith(path, "/")) {
      send(list(type = "reply", id = request$id, ok = FALSE, error = list(code = "invalid-request", message = "a state request needs an absolute path")))
      return()
    }
    body <- tryCatch(
      if (type == "state-save") save_state(path) else load_state(path),
      error = function(condition) state_error("state-failed", conditionMessage(condition))
    )
    if (!is.null(body$error)) {
      send(list(type = "reply", id = request$id, ok = FALSE, error = body$error))
    } else {
      do.call(reply, c(list(request), body))
    }
  } else if (type == "complete" || type == "inspect") {
    code <- as.character(request$code %or% "")
    if (length(code) != 1L) code <- ""
    body <- tryCatch(
      if (type == "complete") complete(code, request$cursorPos) else inspect(code, request$cursorPos, request$detailLevel),
      error = function(condition) list(error = conditionMessage(condition))
    )
    if (!is.null(body$error)) {
      send(list(type = "reply", id = request$id, ok = FALSE, error = list(code = "internal", message = body$error)))
    } else {
      do.call(reply, c(list(request), body))
    }
  } else if (type == "is-complete") {
    do.call(reply, c(list(request), is_complete(as.character(request$code %or% ""))))
  } else {
    message <- sprintf("unknown request type '%s'", type)
    send(list(type = "reply", id = request$id, ok = FALSE, error = list(code = "unknown-request", message = message)))
  }
}

main <- function() {
  options(device = open_plot_device)
  version <- paste(R.version$major, R.version$minor, sep = ".")
  send(list(type = "ready", protocolVersion = 2L, language = "r", version = version, pid = Sys.getpid()))
  repeat {
    line <- readLines(requests, n = 1L, encoding = "UTF-8", warn = FALSE)
    if (length(line) == 0L) quit(save = "no", status = 0L, runLast = FALSE) # the supervisor is gone
    if (!nzchar(line)) next
    tryCatch(handle(line), error = function(condition) {
      send(list(type = "log", message = paste("sandcell R kernel:", conditionMessage(condition))))
    })
  }
}
