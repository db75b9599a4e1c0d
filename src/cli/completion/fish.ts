import { argCommands, flagSets, shortPairs, spellings, valueGroups } from './groups.js';
import type { CompletionSpec, FlagSpec } from './spec.js';

/** A word for fish: single-quoted, where only \\ and \' are escapes. */
const quote = (s: string) => `'${s.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`;
const list = (items: string[]) => items.map(quote).join(' ');

/**
 * The fish script of `ccm completion fish`: the same walk over the words as bash's (bash.ts), in fish,
 * given to fish as one `complete -a` function whose lines are `candidate<TAB>what it is`.
 */
export function fishScript(spec: CompletionSpec, version: string): string {
  const { bin } = spec;
  const ids = spec.commands.map((c) => c.words.join(' '));
  const flagCase = (flags: FlagSpec[]) => {
    const sets = flagSets(flags);
    const described = flags.flatMap((f) => spellings(f).map((s) => `${quote(s)}\\t${quote(f.description)}`));
    return [
      `            set -g __ccm_v ${list(sets.value)}`,
      `            set -g __ccm_b ${list(sets.bool)}`,
      `            set -g __ccm_m ${list(sets.multiple)}`,
      `            set -g __ccm_p ${list(shortPairs(flags))}`,
      `            set -g __ccm_fd ${described.join(' ')}`,
    ].join('\n');
  };
  const flagCases = [
    ...spec.commands.map((c) => `        case ${quote(c.words.join(' '))}\n${flagCase(c.flags)}`),
    `        case ''\n${flagCase(spec.rootFlags)}`,
    `        case '*'\n${flagCase([])}`,
  ];
  const valueCases = valueGroups(spec).map(
    (g) =>
      `        case ${list(g.keys)}\n            set -g __ccm_vals ${list(g.items)}${g.list ? '\n            set -g __ccm_sep ,' : ''}`,
  );
  const argCases = argCommands(spec).map(({ id, args }) =>
    args === 'commands'
      ? `        case ${quote(id)}\n            set -g __ccm_path $argv[2]\n            __ccm_next $argv[2]`
      : `        case ${quote(id)}\n            test -z "$argv[2]"; and set -g __ccm_reply ${list(args)}`,
  );
  const summaries = [...spec.topics, ...spec.commands].map(
    (c) => `${quote(c.words.join(' '))}\\t${quote(c.summary)}`,
  );
  return `# fish completion for ${bin} ${version}, printed by \`${bin} completion fish\`.
#
# Load it into this shell:   ${bin} completion fish | source
# and into every new one:    the same line in ~/.config/fish/config.fish
#
# Every command, flag and value it completes is in this file: a TAB starts no program (no ${bin}, no
# Node), so completing never reaches a network, a cloud or an API server. Print it again after an
# upgrade of ${bin}.

set -g __ccm_ids ${list(ids)}
# What each command and topic does: its words<TAB>its summary.
set -g __ccm_summaries ${summaries.join(' ')}

# __ccm_flags COMMAND: its flags that take a value (__ccm_v), that take none (__ccm_b), that may be
# given again (__ccm_m), its short flags with their long names (__ccm_p), what each does (__ccm_fd).
function __ccm_flags
    switch $argv[1]
${flagCases.join('\n')}
    end
end

# __ccm_values COMMAND FLAG: the fixed set of the flag's values (__ccm_vals), __ccm_sep , when it takes
# a comma list of them; false when the flag takes any value.
function __ccm_values
    set -g __ccm_sep ''
    switch "$argv[1] $argv[2]"
${valueCases.join('\n')}
        case '*'
            return 1
    end
end

# __ccm_args COMMAND ARGS: what the command's next argument can be, after these.
function __ccm_args
    switch $argv[1]
${argCases.join('\n')}
    end
end

# __ccm_next WORDS: the words that can follow these on the way to a command (none: the top).
function __ccm_next
    set -l p ''
    test -n "$argv[1]"; and set p "$argv[1] "
    for id in $__ccm_ids
        string match -q -- "$p?*" $id; or continue
        set -l rest (string split -m1 ' ' -- (string sub -s (math (string length -- "$p") + 1) -- $id))[1]
        contains -- $rest $__ccm_reply; or set -g -a __ccm_reply $rest
    end
end

# __ccm_leads WORDS: whether these words are a command or lead to one.
function __ccm_leads
    for id in $__ccm_ids
        if test "$id" = "$argv[1]"; or string match -q -- "$argv[1] *" $id
            return 0
        end
    end
    return 1
end

# __ccm_candidates WORD...: what the last word can be, after the words before it (${bin} first).
# Sets __ccm_reply, __ccm_kind (words, flags or values), __ccm_path (the words the reply's words
# follow), __ccm_prefix (what of the word comes before the reply: --flag= or a list's first items)
# and __ccm_files (the flag takes a file or any value).
function __ccm_candidates
    set -l n (count $argv)
    set -l cur $argv[$n]
    set -l cmd ''
    set -l path ''
    set -l expect ''
    set -l dashdash ''
    set -l value ''
    set -l args
    set -l used
    set -g __ccm_reply
    set -g __ccm_prefix ''
    set -g __ccm_files ''
    set -g __ccm_kind words
    set -g __ccm_path ''
    __ccm_flags ''
    set -l before
    test $n -gt 2; and set before $argv[2..-2]
    for w in $before
        if test -n "$expect"
            set expect ''
        else if test -z "$dashdash"; and test "$w" = --
            set dashdash 1
        else if test -z "$dashdash"; and string match -q -- '-?*' $w
            set -a used (string replace -r -- '=.*' '' $w)
            if not string match -q -- '*=*' $w; and contains -- $w $__ccm_v
                set expect $w
            end
        else
            set -l next $w
            test -n "$path"; and set next "$path $w"
            if test (count $args) -eq 0; and __ccm_leads $next
                set path $next
                if contains -- $path $__ccm_ids
                    set cmd $path
                    __ccm_flags $cmd
                end
            else
                set -a args $w
            end
        end
    end
    if test -n "$expect"
        set value $cur
    else if test -z "$dashdash"; and string match -q -- '--*=*' $cur; and contains -- (string replace -r -- '=.*' '' $cur) $__ccm_v
        set expect (string replace -r -- '=.*' '' $cur)
        set value (string replace -r -- '^[^=]*=' '' $cur)
        set -g __ccm_prefix "$expect="
    end
    if test -n "$expect"
        set -g __ccm_kind values
        if not __ccm_values "$cmd" $expect
            set -g __ccm_files 1
        else if test -n "$__ccm_sep"
            # A comma list: the items not in it yet; -name (all but this one) once the item starts with -.
            set -l have
            if string match -q -- '*,*' $value
                set have (string split , -- (string replace -r -- ',[^,]*$' '' $value))
                set -g __ccm_prefix "$__ccm_prefix"(string join , -- $have),
            end
            set -l item (string replace -r -- '^.*,' '' $value)
            for w in $__ccm_vals
                if contains -- $w $have; or contains -- -$w $have
                    continue
                end
                if string match -q -- '-*' "$item"
                    test "$w" = '*'; or set -g -a __ccm_reply -$w
                else
                    set -g -a __ccm_reply $w
                end
            end
        else
            set -g __ccm_reply $__ccm_vals
        end
        return
    end
    if test -z "$dashdash"; and not string match -q -- '-*' $cur
        # A topic's commands, or a command's arguments: words before flags.
        set -g __ccm_path $path
        test (count $args) -eq 0; and __ccm_next $path
        if test -n "$cmd"; and test (count $__ccm_reply) -eq 0
            __ccm_args $cmd "$args"
        end
        if test (count $__ccm_reply) -gt 0; or test -z "$cmd$path"
            return
        end
    end
    if test -n "$dashdash"; or begin; test -z "$cmd"; and test -n "$path"; end
        return
    end
    # The flags not given yet: each once (its short and long names, --x and --no-x are one flag).
    set -g __ccm_kind flags
    set -l given
    for u in $used
        set -a given $u --no-(string replace -r -- '^--' '' $u) (string replace -r -- '^--no-' '--' $u)
        for p in $__ccm_p
            set -l pair (string split : -- $p)
            contains -- $u $pair; and set -a given $pair
        end
    end
    for f in $__ccm_v $__ccm_b
        if contains -- $f $__ccm_m; or not contains -- $f $given
            set -g -a __ccm_reply $f
        end
    end
end

# Whether the word under the cursor is a file name (the flag takes a file or any value): fish's own
# completion of file names (-F below) then, which starts no program either.
function __ccm_wants_files
    __ccm_walk
    test -n "$__ccm_files"
end

# The walk over the line as it is, once per TAB: fish asks __ccm_wants_files twice and __ccm_complete.
function __ccm_walk
    set -l cur (commandline -ct)
    set -l key (string join \\x1e -- (commandline -opc) "cursor:$cur")
    if test "$key" != "$__ccm_key"; or not set -q __ccm_key
        set -g __ccm_key $key
        __ccm_candidates (commandline -opc) "$cur"
    end
end

# The completions of the word under the cursor, each as \`candidate<TAB>what it is\`.
function __ccm_complete
    __ccm_walk
    test -n "$__ccm_files"; and return
    set -q __ccm_reply[1]; or return
    if test "$__ccm_kind" = flags
        # Each flag's line of __ccm_fd (flag<TAB>what it does), in one match for all of them.
        set -l names '^(?:'(string join '|' -- (string escape --style=regex -- $__ccm_reply))')\\t'
        string match -e -r -- $names $__ccm_fd
        return
    end
    if test "$__ccm_kind" = words
        # A command's or topic's line of __ccm_summaries (its words<TAB>what it does), without the words
        # before it; an argument (a shell's name) as it is.
        set -l p ''
        test -n "$__ccm_path"; and set p "$__ccm_path "
        set -l keys '^(?:'(string join '|' -- (string escape --style=regex -- $p$__ccm_reply))')\\t'
        set -l found (string match -e -r -- $keys $__ccm_summaries)
        string replace -r -- '^'(string escape --style=regex -- $p) '' $found
        set -l described (string replace -r -- '\\t.*' '' $found)
        for c in $__ccm_reply
            contains -- "$p$c" $described; or echo $c
        end
        return
    end
    # Each value after the word's --flag= or list so far (one prefix, set even when empty).
    printf '%s\\n' $__ccm_prefix$__ccm_reply
end

complete -c ${bin} -e
complete -c ${bin} -n 'not __ccm_wants_files' -f -a '(__ccm_complete)'
complete -c ${bin} -n __ccm_wants_files -F
`;
}
