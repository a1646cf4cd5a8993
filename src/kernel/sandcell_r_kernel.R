# sandcell's R kernel (protocol v2, an fd 3/4 kernel: requests on fd 3, events
# on fd 4; see docs/kernel-protocol.md). R runs this file with -f, so R itself
# is not interactive (interactive() is FALSE, as in other notebook kernels):
# the loop below is the console. Each top-level expression of a cell is
# evaluated in the global environment; a visible value is printed as R prints
# it (a result for the last expression, a display before that); plots drawn on
# the kernel's PNG device come back as displays; errors are data.
#
# Interrupts (SIGINT) are suspended everywhere but in the user's code, so one
# that arrives late, while the kernel is between cells, can never abort the
# loop; a pending one is let out harmlessly before each cell starts.
#
# R's file console (-f) parses one long expression in time that grows with the
# square of its length (~0.1 s of CPU for the kernel below), so its first, short
# expression has parse() read this file and run the rest; the console never
# reads further, since the kernel's loop only ends by quitting R.
local({
  arguments <- commandArgs()
  at <- match("-f", arguments)
  path <- if (is.na(at)) sub("^--file=", "", grep("^--file=", arguments, value = TRUE)[1]) else arguments[at + 1L]
  # The kernel's environment sees where its parts are, and the global environment beyond.
  kernel <- new.env(parent = globalenv())
  kernel$kernel_directory <- dirname(path)
  for (part in parse(path, keep.source = FALSE, encoding = "UTF-8")[-1L]) eval(part, kernel)
})
local({
  `%or%` <- function(value, default) if (is.null(value)) default else value

  settings <- tryCatch(jsonlite::parse_json(Sys.getenv("SANDCELL_KERNEL_OPTIONS", "{}")), error = function(e) list())
  Sys.unsetenv("SANDCELL_KERNEL_OPTIONS")
  # The protocol is UTF-8; R's own text follows LC_CTYPE (the sandbox sets C.UTF-8).
  if (!isTRUE(l10n_info()[["UTF-8"]])) invisible(Sys.setlocale("LC_CTYPE", "C.UTF-8"))
  output_limit <- as.numeric(settings$outputBytes %or% 1048576)
  result_limit <- as.numeric(settings$resultBytes %or% 33554432)

  # The kernel's other parts, defined in this environment, where their functions and the kernel's see one
  # another: the protocol (sandcell_r_protocol.R: requests on fd 3, events on fd 4) and snapshots.
  for (part in c("sandcell_r_protocol.R", "sandcell_r_state.R")) {
    sys.source(file.path(kernel_directory, part), envir = environment(), keep.source = FALSE)
  }

  execution_count <- 0L
  plot_directory <- file.path(tempdir(), "sandcell-plots")
  dir.create(plot_directory, showWarnings = FALSE)
  plot_devices <- integer(0)
  opened_devices <- 0L
  MAX_HTML_ROWS <- 50L
  MAX_TRACEBACK_CALLS <- 100L
  PLOT_CLASSES <- c("ggplot", "trellis", "recordedplot", "grob", "gtable", "gTree")

  # --- bounds -----------------------------------------------------------------
  cut_text <- function(text, limit, what) {
    size <- nchar(text, type = "bytes")
    if (size <= limit) return(text)
    note <- sprintf("\n[sandcell cut this %s: %.0f bytes, the first %.0f kept; the limit follows the session option outputBytes]", what, size, max(0, limit - 200))
    head <- rawToChar(charToRaw(text)[seq_len(max(0, limit - 200))])
    paste0(iconv(head, "UTF-8", "UTF-8", sub = ""), note)
  }
  cut_traceback <- function(calls) {
    kept <- character(0)
    used <- 0
    for (entry in rev(calls)) {
      used <- used + nchar(entry, type = "bytes") + 1
      if (used > output_limit) {
        kept <- c(kept, sprintf("[sandcell cut %d earlier calls: the traceback is kept within the session option outputBytes]", length(calls) - length(kept)))
        break
      }
      kept <- c(kept, entry)
    }
    rev(kept)
  }

  # --- values, data frames, plots ------------------------------------------------
  html_escape <- function(text) {
    text <- gsub("&", "&amp;", text, fixed = TRUE)
    text <- gsub("<", "&lt;", text, fixed = TRUE)
    gsub(">", "&gt;", text, fixed = TRUE)
  }
  column_type <- function(column) {
    kind <- class(column)[1]
    abbreviations <- c(numeric = "dbl", integer = "int", character = "chr", factor = "fct", logical = "lgl", Date = "date", POSIXct = "dttm", complex = "cpl", list = "list")
    if (kind %in% names(abbreviations)) abbreviations[[kind]] else kind
  }
  html_table <- function(frame) {
    rows <- seq_len(min(nrow(frame), MAX_HTML_ROWS))
    shown <- as.data.frame(frame)[rows, , drop = FALSE]
    cells <- as.matrix(format.data.frame(shown, na.encode = FALSE))
    # A matrix column formats as several: then the header follows the formatted columns, without types.
    header <- paste0("<th>", html_escape(colnames(cells)), "</th>", collapse = "")
    types <- if (ncol(cells) == ncol(frame)) {
      paste0("<tr><th></th>", paste0("<th>&lt;", html_escape(vapply(frame, column_type, "")), "&gt;</th>", collapse = ""), "</tr>")
    } else {
      ""
    }
    body <- vapply(rows, function(row) {
      paste0("<tr><th>", html_escape(rownames(shown)[row]), "</th>", paste0("<td>", html_escape(cells[row, ]), "</td>", collapse = ""), "</tr>")
    }, "")
    caption <- sprintf("A %s: %d &times; %d", html_escape(class(frame)[1]), nrow(frame), ncol(frame))
    if (nrow(frame) > length(rows)) caption <- sprintf("%s (the first %d rows)", caption, length(rows))
    paste0(
      "<table class=\"dataframe\">\n<caption>", caption, "</caption>\n",
      "<thead><tr><th></th>", header, "</tr>", types, "</thead>\n<tbody>\n",
      paste(body, collapse = "\n"), "\n</tbody>\n</table>"
    )
  }
  # What print (show, for S4) writes for `value`, as capture.output would give it
  # joined by line breaks, through one reused connection (capture.output makes a
  # text connection each time: half of a warm `1+1`).
  capture <- rawConnection(raw(0), "r+")
  printed <- function(value) {
    seek(capture, 0, rw = "write")
    sink(capture)
    on.exit(sink()) # a print method that fails must not leave the sink behind
    if (isS4(value)) methods::show(value) else print(value)
    size <- seek(capture, rw = "write")
    text <- rawToChar(rawConnectionValue(capture)[seq_len(size)])
    if (size > 1048576) { # the connection keeps its largest buffer: start small again
      close(capture)
      capture <<- rawConnection(raw(0), "r+")
    }
    sub("\n$", "", text)
  }
  # A visible value as a MIME bundle; a plot object is drawn instead (its page
  # comes back with the cell's other plots), so it has none.
  represent <- function(value) {
    if (inherits(value, PLOT_CLASSES)) {
      if (inherits(value, c("grob", "gtable", "gTree"))) grid::grid.draw(value) else print(value)
      return(NULL)
    }
    text <- printed(value)
    bundle <- list("text/plain" = text)
    if (is.data.frame(value) && ncol(value) > 0) {
      # The table is extra: a frame R prints but the table cannot show (odd columns) keeps its text.
      bundle[["text/html"]] <- tryCatch(html_table(value), error = function(condition) NULL)
    }
    bundle
  }
  # The device R opens when code draws with none open (options(device)): a PNG
  # per page, collected when the cell ends.
  open_plot_device <- function(...) {
    opened_devices <<- opened_devices + 1L
    pattern <- file.path(plot_directory, sprintf("%06d-%%04d.png", opened_devices))
    # The size options IRkernel users already set (repr.plot.*), in inches and dots per inch.
    grDevices::png(
      pattern,
      width = getOption("repr.plot.width", 7), height = getOption("repr.plot.height", 5), units = "in",
      res = getOption("repr.plot.res", 100), type = if (capabilities("cairo")) "cairo" else "Xlib"
    )
    plot_devices <<- c(plot_devices, grDevices::dev.cur())
  }
  close_plot_devices <- function() {
    for (device in intersect(plot_devices, grDevices::dev.list())) try(grDevices::dev.off(device), silent = TRUE)
    plot_devices <<- integer(0)
    pages <- sort(list.files(plot_directory, pattern = "\\.png$", full.names = TRUE))
    images <- lapply(pages, function(page) gsub("\n", "", jsonlite::base64_enc(readBin(page, "raw", file.size(page))), fixed = TRUE))
    unlink(pages)
    images
  }

  # --- warnings, as R's console prints them after each top-level call ---------
  EVALUATION_CALL <- quote(eval(expression, globalenv()))
  pending_warnings <- list()
  collect_warning <- function(condition) {
    if (!isTRUE(getOption("warn", 0) == 0)) return() # warn = 1 prints at once, 2 makes an error: R's own job
    pending_warnings[[length(pending_warnings) + 1L]] <<- condition
    invokeRestart("muffleWarning")
  }
  describe_warning <- function(condition) {
    call <- conditionCall(condition)
    message <- conditionMessage(condition)
    if (is.null(call) || identical(call, EVALUATION_CALL)) return(message)
    where <- deparse(call, nlines = 1L)[1]
    separator <- if (nchar(where) + nchar(strsplit(message, "\n")[[1]][1]) + 6 > 75) " :\n  " else " : "
    paste0("In ", where, separator, message)
  }
  print_warnings <- function() {
    found <- pending_warnings
    pending_warnings <<- list()
    text <- if (length(found) == 1L) {
      paste0("Warning message:\n", describe_warning(found[[1]]), "\n")
    } else if (length(found) <= 10L) {
      paste0("Warning messages:\n", paste0(seq_along(found), ": ", vapply(found, describe_warning, ""), "\n", collapse = ""))
    } else if (length(found) < 50L) {
      sprintf("There were %d warnings (use warnings() to see them)\n", length(found))
    } else {
      "There were 50 or more warnings (use warnings() to see the first 50)\n"
    }
    cat(text, file = stderr())
  }

  # --- running the user's code ---------------------------------------------------
  # The user's calls: after the kernel's own frames (up to its eval), before the
  # handler's; R's C-level errors (log("a")) have no frame, so their call is added.
  describe_error <- function(condition, calls) {
    name <- cut_text(class(condition)[1], 1024, "error name")
    value <- cut_text(conditionMessage(condition), output_limit, "error value")
    start <- which(vapply(calls, identical, TRUE, EVALUATION_CALL))
    calls <- if (length(start)) calls[-seq_len(max(start))] else list()
    if (length(calls) && identical(calls[[length(calls)]][[1]], quote(.handleSimpleError))) calls <- calls[-length(calls)]
    trailing <- conditionCall(condition)
    known <- identical(trailing, EVALUATION_CALL) || any(vapply(calls, identical, TRUE, trailing))
    if (!is.null(trailing) && !known) calls <- c(calls, list(trailing))
    numbers <- seq_along(calls)
    if (length(calls) > MAX_TRACEBACK_CALLS) {
      numbers <- utils::tail(numbers, MAX_TRACEBACK_CALLS)
      calls <- utils::tail(calls, MAX_TRACEBACK_CALLS)
    }
    if (length(calls) == 0L) return(list(name = name, value = value, traceback = list()))
    lines <- vapply(calls, function(call) {
      text <- deparse(call, width.cutoff = 100L)
      if (length(text) > 1L) paste(text[1], "...") else text
    }, "")
    list(name = name, value = value, traceback = as.list(cut_traceback(paste0(numbers, ": ", lines))))
  }
  INTERRUPTED <- list(name = "Interrupted", value = "the execution was interrupted (SIGINT)", traceback = list())
  # One top-level expression, with interrupts allowed: a list with `error`
  # when it failed, else with `bundle` when its value is visible.
  run_expression <- function(expression) {
    calls <- NULL
    outcome <- tryCatch(
      withCallingHandlers(
        allowInterrupts({
          shown <- withVisible(eval(expression, globalenv()))
          set_last_value(shown$value)
          if (shown$visible) list(bundle = represent(shown$value)) else list()
        }),
        error = function(condition) calls <<- sys.calls()[seq_len(sys.nframe() - 1L)],
        warning = collect_warning
      ),
      error = function(condition) list(error = describe_error(condition, calls)),
      interrupt = function(condition) list(error = INTERRUPTED)
    )
    if (length(pending_warnings)) print_warnings()
    outcome
  }
  set_last_value <- function(value) {
    unlockBinding(".Last.value", baseenv())
    assign(".Last.value", value, envir = baseenv())
    lockBinding(".Last.value", baseenv())
  }
  # An interrupt that came between cells (the host asked just as the last one
  # ended) is pending: let it out here rather than into the user's code.
  let_out_stale_interrupt <- function() tryCatch(allowInterrupts(Sys.sleep(0)), interrupt = function(condition) NULL)

  execute <- function(request) {
    execution_count <<- execution_count + 1L
    id <- json_string(request$id %or% "")
    results_used <- 0
    truncated <- FALSE
    emit <- function(type, bundle) {
      data <- paste0("{", paste0("\"", names(bundle), "\":", vapply(bundle, json_string, ""), collapse = ","), "}")
      count <- if (type == "result") sprintf(",\"executionCount\":%d", execution_count) else ""
      line <- sprintf("{\"type\":\"%s\",\"id\":%s,\"data\":%s,\"metadata\":{}%s}", type, id, data, count)
      size <- nchar(line, type = "bytes") + 1
      if (results_used + size > result_limit) {
        truncated <<- TRUE # past the execution's budget for results: dropped, as the Python kernel does
        return()
      }
      results_used <<- results_used + size
      write_event(line)
    }
    let_out_stale_interrupt()
    parsed <- tryCatch(list(expressions = parse(text = as.character(request$code %or% ""), keep.source = FALSE)), error = function(condition) {
      list(error = list(name = class(condition)[1], value = cut_text(conditionMessage(condition), output_limit, "error value"), traceback = list()))
    })
    failure <- parsed$error
    last <- NULL
    count <- length(parsed$expressions)
    for (index in seq_len(count)) {
      outcome <- run_expression(parsed$expressions[[index]])
      failure <- outcome$error
      if (!is.null(failure)) break
      if (is.null(outcome$bundle)) next
      if (index == count) last <- outcome$bundle else emit("display", outcome$bundle)
    }
    if (length(plot_devices)) {
      for (image in close_plot_devices()) emit("display", list("image/png" = image))
    }
    if (!is.null(last)) emit("result", last)
    if (!is.null(failure)) write_event(sprintf("{\"type\":\"error\",\"id\":%s,%s", id, substring(to_json(failure), 2L)))
    status <- if (is.null(failure)) "ok" else "error"
    write_event(sprintf(
      "{\"type\":\"execution-end\",\"id\":%s,\"status\":\"%s\",\"executionCount\":%d,\"outputTruncated\":%s}",
      id, status, execution_count, if (truncated) "true" else "false"
    ))
  }

  is_complete <- function(code) {
    problem <- tryCatch({
      parse(text = code, keep.source = FALSE)
      NULL
    }, error = function(condition) conditionMessage(condition))
    status <- if (is.null(problem)) "complete" else if (grepl("unexpected (end of input|INCOMPLETE_STRING)", problem)) "incomplete" else "invalid"
    list(status = status, indent = 0L)
  }
  # --- completion and inspection: utils' own completer, R's help pages -------
  # Positions count characters, which in the UTF-8 locale are code points, as Jupyter counts them.
  MAX_MATCHES <- 1000L
  MAX_INSPECT_CHARS <- 262144L
  cursor_in <- function(code, cursor) {
    cursor <- suppressWarnings(as.integer(cursor %or% NA))
    if (length(cursor) != 1L || is.na(cursor) || cursor < 0L || cursor > nchar(code)) nchar(code) else cursor
  }
  complete <- function(code, cursor) {
    cursor <- cursor_in(code, cursor)
    before <- substr(code, 1L, cursor)
    # The completer reads one line: the one the cursor is on.
    line_start <- regexpr("[^\n]*$", before)
    line <- substring(before, line_start)
    utils:::.assignLinebuffer(line)
    utils:::.assignEnd(nchar(line))
    utils:::.guessTokenFromLine()
    utils:::.completeToken()
    matches <- head(unique(as.character(utils:::.retrieveCompletions())), MAX_MATCHES)
    start <- line_start - 1L + as.integer(utils:::.CompletionEnv[["start"]])
    list(matches = as.list(matches), cursorStart = start, cursorEnd = cursor, metadata = structure(list(), names = character(0)))
  }
  inspect <- function(code, cursor, detail) {
    cursor <- cursor_in(code, cursor)
    left <- regmatches(substr(code, 1L, cursor), regexpr("[A-Za-z0-9._:]*$", substr(code, 1L, cursor)))
    right <- regmatches(substring(code, cursor + 1L), regexpr("^[A-Za-z0-9._]*", substring(code, cursor + 1L)))
    name <- paste0(left, right)
    parts <- strsplit(name, ":::?")[[1]]
    topic <- parts[length(parts)]
    package <- if (length(parts) == 2L) parts[1] else NULL
    text <- character(0)
    if (nzchar(topic) && is.null(package) && exists(topic, envir = globalenv(), inherits = FALSE)) {
      value <- get(topic, envir = globalenv())
      text <- capture.output(if (is.function(value)) print(value) else utils::str(value))
    } else if (nzchar(topic)) {
      pages <- tryCatch(utils::help((topic), package = (package), help_type = "text"), error = function(e) character(0))
      if (length(pages)) {
        text <- capture.output(tools::Rd2txt(utils:::.getHelpFile(pages[1]), options = list(underline_titles = FALSE)))
        if (identical(detail, 1L) && exists(topic, mode = "function")) text <- c(text, "", "Source:", capture.output(print(get(topic, mode = "function"))))
      }
    }
    empty <- structure(list(), names = character(0))
    if (!length(text)) return(list(found = FALSE, data = empty, metadata = empty))
    text <- substr(paste(text, collapse = "\n"), 1L, MAX_INSPECT_CHARS)
    list(found = TRUE, data = list("text/plain" = text), metadata = empty)
  }
  reset <- function() {
    close_plot_devices()
    rm(list = ls(globalenv(), all.names = TRUE), envir = globalenv())
    execution_count <<- 0L
  }
  suspendInterrupts(main())
})
