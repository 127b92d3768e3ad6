// The status-bar item: running searches with their best speedup so far, then the last result.

import * as vscode from "vscode";
import { CLIENT_COMMANDS } from "./commands";
import { SearchTracker, statusView } from "./searches";

export class SearchStatusBar implements vscode.Disposable {
  readonly item: vscode.StatusBarItem;
  private readonly subscription: { dispose(): void };

  constructor(private readonly tracker: SearchTracker) {
    this.item = vscode.window.createStatusBarItem("kernelevolve.searches", vscode.StatusBarAlignment.Left, 10);
    this.item.name = "kernelevolve searches";
    this.item.command = CLIENT_COMMANDS.showCandidates;
    this.subscription = tracker.onDidChange(() => this.render());
    this.render();
  }

  render(): void {
    const view = statusView(this.tracker);
    this.item.text = view.text;
    this.item.tooltip = view.tooltip;
    if (view.visible) this.item.show();
    else this.item.hide();
  }

  dispose(): void {
    this.subscription.dispose();
    this.item.dispose();
  }
}
