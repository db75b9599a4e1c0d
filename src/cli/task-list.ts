import type { ListrRendererFactory, ListrTask } from 'listr2';
import { printable, printableLine } from '../printable.js';

type AnyTask = { title?: unknown; task: (ctx: never, wrapper: never) => unknown };

/**
 * listr2 tasks whose every title and output reaches the terminal screened: the title they start
 * with, what the task sets (`task.title = …`, `task.output = …`) as it runs, and its subtasks
 * (`task.newListr`). Titles are one line (printableLine). A title often carries outside data (the
 * account the cloud names, a host's error, the API server's answer): every task list of ccm is made
 * through this, so that no title can set the terminal's title or clear its screen.
 */
export function screenedTasks<
  Ctx,
  Renderer extends ListrRendererFactory,
  Fallback extends ListrRendererFactory = Renderer,
>(tasks: ListrTask<Ctx, Renderer, Fallback>[]): ListrTask<Ctx, Renderer, Fallback>[] {
  return screened(tasks as AnyTask[]) as ListrTask<Ctx, Renderer, Fallback>[];
}

function screened(tasks: AnyTask[]): AnyTask[] {
  return tasks.map((t) => ({
    ...t,
    ...(typeof t.title === 'string' ? { title: printableLine(t.title) } : {}),
    task: (ctx: never, wrapper: never) => t.task(ctx, screenedWrapper(wrapper as object) as never),
  }));
}

function screenedWrapper<W extends object>(wrapper: W): W {
  return new Proxy(wrapper, {
    set(target, key, value) {
      let shown = value;
      if (key === 'title' && typeof value === 'string') shown = printableLine(value);
      if (key === 'output' && typeof value === 'string') shown = printable(value);
      return Reflect.set(target, key, shown);
    },
    get(target, key) {
      const value = Reflect.get(target, key);
      if (key === 'newListr' && typeof value === 'function') {
        return (tasks: unknown, ...rest: unknown[]) =>
          value.call(
            target,
            typeof tasks === 'function'
              ? (parent: unknown) => screened(tasks(parent) as AnyTask[])
              : screened(tasks as AnyTask[]),
            ...rest,
          );
      }
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
